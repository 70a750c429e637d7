// After tsc: require('node:fs') becomes require('fs') in the CommonJS build. jest before 27 has a
// module registry of its own that does not know the node: scheme ("ENOENT: no such file or
// directory, open 'node:os'"), and apps lock jest 26. Only modules Node also names without the
// scheme are rewritten (node:sqlite and node:test exist only with it).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';

const dist = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..', 'dist');
const bare = new Set(builtinModules.filter((name) => !name.startsWith('node:')));
const REQUIRE = /\brequire\((["'])node:([\w/]+)\1\)/g;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) walk(file);
    else if (name.endsWith('.js')) {
      const text = readFileSync(file, 'utf8');
      const out = text.replace(REQUIRE, (whole, quote, id) => (bare.has(id) ? `require(${quote}${id}${quote})` : whole));
      if (out !== text) writeFileSync(file, out);
    }
  }
}
walk(dist);
