import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Collector } from './collector.js';

export interface ConfigData {
  node: string;
  express: string;
  profiler: string;
  env: { NODE_ENV?: string; APP_ENV?: string };
  debug: boolean;
  platform: string;
  pid: number;
}

/** The version of the package `name` that the app resolves, or 'unknown'. */
function versionOf(name: string, from: string): string {
  try {
    return (createRequire(from)(`${name}/package.json`) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** src/collectors and dist/collectors both sit two levels below the package root. */
function ownVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

let cached: Omit<ConfigData, 'debug'> | undefined;

/** The same for every request of a process: worked out once. */
function processConfig(): Omit<ConfigData, 'debug'> {
  cached ??= {
    node: process.version,
    express: versionOf('express', path.join(process.cwd(), 'index.js')),
    profiler: ownVersion(),
    env: { NODE_ENV: process.env.NODE_ENV, APP_ENV: process.env.APP_ENV },
    platform: `${process.platform} ${process.arch}`,
    pid: process.pid,
  };
  return cached;
}

export const config: Collector<ConfigData> = {
  id: 'config',
  title: 'Configuration',
  collect: (_ctx, options) => ({ ...processConfig(), debug: options.debug }),
};
