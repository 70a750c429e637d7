// After tsc: the package's code is CommonJS (so that require(), jest and TypeScript→CommonJS apps
// load it), and each entry of package.json's exports gets an ES module twin that re-exports the
// CommonJS one. `import` and `require` so reach the same module instance: one request context,
// one store, one writer thread, whichever way the app and its dependencies load the profiler.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(path.join(root, 'package.json'));
const pkg = require('./package.json');

const LOADS_TO_RUN = { './register': ['scriptProfiler'] };

writeFileSync(path.join(root, 'dist', 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

for (const [entry, target] of Object.entries(pkg.exports)) {
  if (typeof target !== 'object' || !target.import) continue;
  const cjs = path.join(root, target.require);
  // An entry that does its work as it loads (the script hook) is not loaded here: its names are known.
  const names = LOADS_TO_RUN[entry] ?? Object.keys(require(cjs)).filter((name) => name !== 'default' && name !== '__esModule');
  if (names.length === 0) throw new Error(`${entry}: ${target.require} exports nothing`);
  const from = `./${path.basename(target.require)}`;
  writeFileSync(path.join(root, target.import), [
    `// The ES module face of ${from}: the same instance, whichever way it is loaded.`,
    `import cjs from '${from}';`,
    '',
    `export const { ${names.join(', ')} } = cjs;`,
    '',
  ].join('\n'));
  writeFileSync(path.join(root, target.types.import), `export * from '${from}';\n`);
}
