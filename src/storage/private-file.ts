import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const made = new Set<string>();

/**
 * The file to open for `database`. The writer thread and the pages each open it, so ':memory:'
 * (one connection's own database) becomes a private temporary file, removed by release() or at exit.
 */
export function fileFor(database: string): string {
  if (database !== ':memory:') return database;
  if (made.size === 0) process.once('exit', () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const dir = mkdtempSync(path.join(tmpdir(), 'web-profiler-'));
  made.add(dir);
  return path.join(dir, 'profiler.sqlite');
}

/** Remove a file fileFor() made; any other file stays. */
export function release(file: string): void {
  const dir = path.dirname(file);
  if (made.delete(dir)) rmSync(dir, { recursive: true, force: true });
}
