import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const PAGES = ['README.md', 'bench/README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) => heading.trim().toLowerCase().replace(/`/g, '').replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

/** Every link a page makes to a file of the repository (Markdown links, and the src/srcset of its pictures), outside code blocks. */
function linksOf(page: string): string[] {
  const text = readFileSync(path.join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g), ...text.matchAll(/\b(?:src|srcset)="([^"]+)"/g)].map((m) => m[1]);
  return links.filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link));
}

describe('the README and docs/', () => {
  it.each(PAGES)('%s: every relative link resolves, to a file and to a heading in it', (page) => {
    const broken: string[] = [];
    for (const link of linksOf(page)) {
      const [file, anchor] = link.split('#');
      const target = file === '' ? path.join(ROOT, page) : path.resolve(path.dirname(path.join(ROOT, page)), decodeURIComponent(file));
      if (!existsSync(target)) {
        broken.push(`${link}: no such file`);
        continue;
      }
      if (anchor !== undefined && target.endsWith('.md')) {
        const headings = [...readFileSync(target, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]));
        if (!headings.includes(anchor)) broken.push(`${link}: no heading "${anchor}"`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README is a user\'s page: at most 250 lines, the two commands and the mount with notFound and errorHandler on its first screen', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n');
    expect(readme.length).toBeLessThanOrEqual(250);
    const first = readme.slice(0, 40).join('\n');
    for (const shown of ['npm install && npm start', 'npm install && npm test', 'app.use(profiler)', 'app.use(profiler.notFound)', 'app.use(profiler.errorHandler)']) expect(first).toContain(shown);
  });

  it('every page of docs/ is listed in its index and reached from the README', () => {
    const index = readFileSync(path.join(ROOT, 'docs/README.md'), 'utf8');
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const page of PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md')) {
      expect(index, page).toContain(`](${path.basename(page)})`);
      expect(readme, page).toContain(`](${page})`);
    }
  });
});
