import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { AppInfo } from './app-info.js';

export interface ConfigData {
  node: string;
  express: string;
  profiler: string;
  env: { NODE_ENV?: string; APP_ENV?: string };
  debug: boolean;
  platform: string;
  pid: number;
  app?: AppInfo;
}

/** The version of the package `name` that the app resolves, or 'unknown'. */
function versionOf(name: string, from: string): string {
  try {
    return (createRequire(from)(`${name}/package.json`) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** src/recording and dist/recording both sit two levels below the package root. */
function ownVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const cached = new Map<boolean, ConfigData>();
const cachedWithApp = new WeakMap<AppInfo, Map<boolean, ConfigData>>();

/** The same for every request of a process: worked out once, and the one object shared by every profile (frozen: its JSON is made once too). */
export function processConfig(debug: boolean, app: AppInfo | undefined): ConfigData {
  const cache = app === undefined ? cached : (cachedWithApp.get(app) ?? cachedWithApp.set(app, new Map()).get(app)!);
  let config = cache.get(debug);
  if (!config) cache.set(debug, (config = Object.freeze({
    node: process.version,
    express: versionOf('express', path.join(process.cwd(), 'index.js')),
    profiler: ownVersion(),
    env: Object.freeze({ NODE_ENV: process.env.NODE_ENV, APP_ENV: process.env.APP_ENV }),
    platform: `${process.platform} ${process.arch}`,
    pid: process.pid,
    debug,
    ...(app === undefined ? {} : { app }),
  })));
  return config;
}

