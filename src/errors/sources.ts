import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { createRequire, findSourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FrameInfo } from './describe.js';

export interface Excerpt {
  /** Line number of lines[0]. */
  start: number;
  lines: string[];
}

const EXCERPT_RADIUS = 5;
const MAX_FILE_BYTES = 1024 * 1024;
const CACHED_FILES = 200;
/** A cached file is checked against its mtime at most this often: developers edit between two errors, rarely within a second. */
const RECHECK_MS = 1000;

/** Modules loaded through require (CommonJS, and CommonJS imported from ESM): the process's own list. */
const loadedModules = createRequire(__filename).cache;

export const toPath = (file: string): string => {
  if (!file.startsWith('file://')) return file;
  try {
    return fileURLToPath(file);
  } catch {
    return file;
  }
};

const SOURCE_FILE = /\.[cm]?[jt]sx?$/;

/**
 * Whether code may be shown from `file`: only a JavaScript or TypeScript source the process
 * loaded as a module (a CommonJS module in the require cache, an ES module, which V8 names by
 * file: URL, or a source named by a loaded source map) or, for runners that evaluate sources
 * themselves (vitest, some TypeScript loaders), one in the app's own directory outside
 * node_modules; never a dotfile, anything in a dot directory, or a device or kernel file.
 */
export function isExcerptable(file: string, raw: string, mapped = false): boolean {
  if (!path.isAbsolute(file) || !SOURCE_FILE.test(file)) return false;
  if (file.split(/[\\/]/).some((part) => part.startsWith('.'))) return false;
  if (/^\/(proc|sys|dev)\//.test(file)) return false;
  return mapped || raw.startsWith('file://') || loadedModules[file] !== undefined || isAppSource(file);
}

const isAppSource = (file: string) => file.startsWith(process.cwd() + path.sep) && !/[\\/]node_modules[\\/]/.test(file);

/** Compiled JavaScript shown as its source where the process has a source map for it. */
export function mapToSource(frame: FrameInfo, raw: string): FrameInfo {
  if (frame.kind !== 'app' || !/\.[cm]?js$/.test(frame.file) || !isExcerptable(frame.file, raw)) return frame;
  try {
    const map = findSourceMap(frame.file);
    const entry = map?.findEntry(frame.line - 1, frame.column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    if (!entry?.originalSource) return frame;
    const file = toPath(entry.originalSource);
    // The map's sources count as loaded; what they are named is checked like any file.
    if (!isExcerptable(file, entry.originalSource, true)) return frame;
    return { ...frame, file, line: (entry.originalLine ?? 0) + 1, column: (entry.originalColumn ?? 0) + 1 };
  } catch {
    return frame;
  }
}

/** Files read for excerpts, kept while their mtime holds; each thread that reads has its own. */
const sources = new Map<string, { mtime: number; checked: number; lines: string[] | null }>();

/** Lines around `line` of `file`, reading at most `budget.reads` files not already cached. */
export function excerptOf(file: string, line: number, budget: { reads: number }): Excerpt | undefined {
  if (line < 1) return undefined;
  const lines = linesOf(file, budget);
  if (!lines || line > lines.length) return undefined;
  const start = Math.max(1, line - EXCERPT_RADIUS);
  const end = Math.min(lines.length, line + EXCERPT_RADIUS);
  return { start, lines: lines.slice(start - 1, end).map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l)) };
}

function linesOf(file: string, budget: { reads: number }): string[] | null {
  const now = Date.now();
  const cached = sources.get(file);
  if (cached && now - cached.checked < RECHECK_MS) return cached.lines;
  try {
    if (cached && statSync(file).mtimeMs === cached.mtime) {
      cached.checked = now;
      return cached.lines;
    }
    if (budget.reads <= 0) return null;
    budget.reads--;
    const read = readBounded(file);
    if (sources.size >= CACHED_FILES) sources.delete(sources.keys().next().value!);
    sources.set(file, { mtime: read.mtime, checked: now, lines: read.text === null ? null : read.text.split(/\r?\n/) });
    return sources.get(file)!.lines;
  } catch {
    return null;
  }
}

/**
 * A regular file's text, if it is no larger than MAX_FILE_BYTES: checked on the open descriptor,
 * so a swap in between changes nothing, and opened without blocking, so a FIFO cannot hang the thread.
 */
function readBounded(file: string): { mtime: number; text: string | null } {
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return { mtime: stat.mtimeMs, text: null };
    const buffer = Buffer.alloc(stat.size);
    let at = 0;
    while (at < buffer.length) {
      const n = readSync(fd, buffer, at, buffer.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return { mtime: stat.mtimeMs, text: buffer.subarray(0, at).toString('utf8') };
  } finally {
    closeSync(fd);
  }
}
