import { readFileSync, statSync } from 'node:fs';
import { findSourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { parse } from 'stacktrace-parser';

export interface Excerpt {
  /** Line number of lines[0]. */
  start: number;
  lines: string[];
}

export interface FrameInfo {
  fn: string;
  file: string;
  line: number;
  column: number;
  /** app frames are expanded with code; vendor (node_modules) and internal (node:) frames are collapsed. */
  kind: 'app' | 'vendor' | 'internal';
  excerpt?: Excerpt;
}

export interface ErrorInfo {
  class: string;
  message: string;
  status: number;
  code?: string;
  stack: string;
  frames: FrameInfo[];
}

/** The thrown error first, then its causes (err.cause) and aggregated errors, as plain JSON. */
export interface ExceptionData {
  status: number;
  chain: ErrorInfo[];
}

const EXCERPT_RADIUS = 5;
const MAX_CHAIN = 10;
const MAX_FILE_BYTES = 2 * 1024 * 1024;

export function statusOf(err: unknown): number {
  const e = err as { status?: unknown; statusCode?: unknown } | null;
  const status = Number(e?.status ?? e?.statusCode);
  return Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500;
}

export function describeException(err: unknown): ExceptionData {
  const chain: ErrorInfo[] = [];
  const seen = new Set<unknown>();
  const visit = (e: unknown) => {
    if (e === undefined || seen.has(e) || chain.length >= MAX_CHAIN) return;
    seen.add(e);
    chain.push(describeError(e));
    if (e instanceof AggregateError) for (const inner of e.errors) visit(inner);
    if (e && typeof e === 'object' && 'cause' in e) visit((e as { cause: unknown }).cause);
  };
  visit(err);
  return { status: statusOf(err), chain };
}

export function describeError(err: unknown): ErrorInfo {
  if (!(err instanceof Error)) {
    const type = err === null ? 'null' : typeof err === 'object' ? (err.constructor?.name ?? 'Object') : typeof err;
    return { class: type, message: typeof err === 'string' ? err : inspect(err, { depth: 2, breakLength: 120 }), status: statusOf(err), stack: '', frames: [] };
  }
  const stack = typeof err.stack === 'string' ? err.stack : '';
  const code = (err as { code?: unknown }).code;
  return {
    class: err.constructor?.name || err.name || 'Error',
    message: String(err.message ?? ''),
    status: statusOf(err),
    code: typeof code === 'string' || typeof code === 'number' ? String(code) : undefined,
    stack,
    frames: framesOf(stack),
  };
}

function framesOf(stack: string): FrameInfo[] {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(stack);
  } catch {
    return [];
  }
  let expanded = 0;
  return parsed.filter((f) => f.file).map((f) => {
    const frame = mapToSource({
      fn: f.methodName && f.methodName !== '<unknown>' ? f.methodName : '(anonymous)',
      file: toPath(f.file!),
      line: f.lineNumber ?? 0,
      column: f.column ?? 0,
      kind: kindOf(f.file!),
    });
    // Code for the first app frames only: they answer "where in my code"; the rest stay one line each.
    if (frame.kind === 'app' && expanded < 10) {
      frame.excerpt = excerptOf(frame.file, frame.line);
      if (frame.excerpt) expanded++;
    }
    return frame;
  });
}

const toPath = (file: string) => {
  if (file.startsWith('file://')) {
    try {
      return fileURLToPath(file);
    } catch {
      return file;
    }
  }
  return file;
};

/** The profiler's own code is a library to its users, wherever it is installed from. */
const OWN_CODE = ['src', 'dist'].map((dir) => fileURLToPath(new URL(`../../${dir}/`, import.meta.url)));
const isOwnCode = (file: string) => OWN_CODE.some((dir) => file.startsWith(dir)) && !/[\\/]demo[\\/]/.test(file);

const kindOf = (file: string): FrameInfo['kind'] => {
  if (file.startsWith('node:') || file.startsWith('internal/') || !/[\\/]/.test(file)) return 'internal';
  if (/[\\/]node_modules[\\/]/.test(file) || isOwnCode(toPath(file))) return 'vendor';
  return 'app';
};

/** Compiled JavaScript shown as its TypeScript source where the process has source maps loaded. */
function mapToSource(frame: FrameInfo): FrameInfo {
  if (frame.kind !== 'app' || !frame.file.endsWith('.js')) return frame;
  try {
    const map = findSourceMap(frame.file);
    const entry = map?.findEntry(frame.line - 1, frame.column - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    if (!entry?.originalSource) return frame;
    return { ...frame, file: toPath(entry.originalSource), line: (entry.originalLine ?? 0) + 1, column: (entry.originalColumn ?? 0) + 1 };
  } catch {
    return frame;
  }
}

/** Files read for excerpts, kept while their mtime holds: developers edit them between two errors. */
const sources = new Map<string, { mtime: number; lines: string[] | null }>();

function excerptOf(file: string, line: number): Excerpt | undefined {
  if (line < 1) return undefined;
  const lines = linesOf(file);
  if (!lines || line > lines.length) return undefined;
  const start = Math.max(1, line - EXCERPT_RADIUS);
  const end = Math.min(lines.length, line + EXCERPT_RADIUS);
  return { start, lines: lines.slice(start - 1, end).map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l)) };
}

function linesOf(file: string): string[] | null {
  try {
    const stat = statSync(file);
    const cached = sources.get(file);
    if (cached && cached.mtime === stat.mtimeMs) return cached.lines;
    const lines = stat.size > MAX_FILE_BYTES ? null : readFileSync(file, 'utf8').split(/\r?\n/);
    if (sources.size >= 200) sources.delete(sources.keys().next().value!);
    sources.set(file, { mtime: stat.mtimeMs, lines });
    return lines;
  } catch {
    return null;
  }
}
