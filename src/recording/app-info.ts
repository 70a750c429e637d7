import { readFileSync } from 'node:fs';
import path from 'node:path';

/** What the config panel says of the app itself, read on the request's thread from its first request. */
export interface AppInfo {
  /** name and version of the package.json in the working directory. */
  name?: string;
  version?: string;
  /** Express's settings (app.set): env, trust proxy, view engine, etag…; functions by name. */
  settings: Record<string, unknown>;
  /** Node's command-line flags (the writer thread has none of its own). */
  execArgv: string[];
}

function ownPackage(): { name?: string; version?: string } {
  try {
    const { name, version } = JSON.parse(readFileSync(path.join(process.cwd(), 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
    return { name: typeof name === 'string' ? name : undefined, version: typeof version === 'string' ? version : undefined };
  } catch {
    return {};
  }
}

/** Plain values of the app's settings (a function, such as a custom query parser, as its name): the writer redacts them like any other. */
export function appInfo(app: unknown): AppInfo {
  const given = (app as { settings?: Record<string, unknown> } | undefined)?.settings ?? {};
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    if (typeof value === 'function') settings[key] = `[function ${value.name || 'anonymous'}]`;
    else if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) settings[key] = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) settings[key] = value;
  }
  return { ...ownPackage(), settings, execArgv: process.execArgv.slice(0, 50) };
}
