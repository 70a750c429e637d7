import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// Data walks one way: capture (recording, instruments) → store (redaction, storage) → derive
// (collectors) → show (web, and testing: what an app's tests read). A folder may import those before it, never those after; the files
// at the top of src/ wire them together.
const SRC = path.resolve(__dirname, '../src');
const ORDER = ['errors', 'recording', 'instruments', 'redaction', 'storage', 'collectors', 'web', 'testing', 'cli', 'demo'];

/** Each source file's folder and the folders its imports (type-only ones too) reach. */
function folderImports(): { file: string; from: string; to: string }[] {
  const edges: { file: string; from: string; to: string }[] = [];
  for (const from of readdirSync(SRC, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)) {
    for (const name of readdirSync(path.join(SRC, from)).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(path.join(SRC, from, name), 'utf8');
      for (const m of text.matchAll(/(?:from|import\()\s*'(\.\.?\/[^']+)'/g)) {
        const target = path.relative(SRC, path.resolve(SRC, from, m[1]));
        const to = target.includes(path.sep) ? target.split(path.sep)[0] : '(top)';
        if (to !== from) edges.push({ file: `${from}/${name}`, from, to });
      }
    }
  }
  return edges;
}

describe('the flow of data goes one way', () => {
  const edges = folderImports();

  it('knows every folder of src/', () => {
    for (const { from, to } of edges) expect(ORDER, `${from} → ${to}`).toEqual(expect.arrayContaining(to === '(top)' ? [from] : [from, to]));
  });

  it('no folder imports one that comes after it (capture → store → derive → show)', () => {
    // The options module and the package's entry are read by every side; nothing else at the top.
    const backwards = edges
      .filter(({ from, to }) => (to === '(top)' ? false : ORDER.indexOf(to) > ORDER.indexOf(from)))
      .map(({ file, to }) => `${file} imports from ${to}/`);
    expect(backwards).toEqual([]);
  });

  it('the options, which every side reads, read nothing of the panels: the app\'s collectors are data to them', () => {
    const text = readFileSync(path.join(SRC, 'options.ts'), 'utf8');
    const reached = [...text.matchAll(/(?:from|import\()\s*'\.\/([^/']+)\//g)].map((m) => m[1]);
    expect(reached.filter((folder) => ORDER.indexOf(folder) >= ORDER.indexOf('collectors'))).toEqual([]);
    expect(reached.length).toBeGreaterThan(0);
  });

  it('the write side (recording, redaction, storage) reads nothing of the pages', () => {
    const reads = edges.filter(({ from, to }) => ['recording', 'instruments', 'redaction', 'storage'].includes(from) && ['collectors', 'web', 'cli'].includes(to));
    expect(reads.map(({ file, to }) => `${file} → ${to}`)).toEqual([]);
  });
});
