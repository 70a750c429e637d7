import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
export const ARTIFACTS = path.resolve('test-artifacts');

if (!CHROMIUM) {
  // Loud on purpose: a skipped browser suite must never look like a passing one.
  process.stderr.write('\n!!! BROWSER TESTS SKIPPED: no chromium at /usr/bin/chromium. Install it: apt-get install -y chromium\n\n');
}

export async function launch(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
}

/** A page that fails the test on any script error, and notes whether injected script ever ran. */
export async function openPage(browser: Browser, colorScheme: 'light' | 'dark' = 'light', width = 1280): Promise<{ page: Page; errors: string[] }> {
  // A phone's screen (390 × 844), or a laptop's.
  const context = await browser.newContext({ viewport: { width, height: width < 600 ? 844 : 900 }, colorScheme });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('dialog', (d) => {
    errors.push(`dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  return { page, errors };
}

export async function shot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  return file;
}

/** Whether the element is whole on the page's first screen, unscrolled. */
export async function onFirstScreen(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).first().boundingBox();
  const viewport = page.viewportSize();
  return box !== null && viewport !== null && box.y >= 0 && box.y + box.height <= viewport.height && box.x >= 0 && box.x + box.width <= viewport.width;
}
