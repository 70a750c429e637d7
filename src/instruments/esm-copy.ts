import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const requiresModules = (process.features as { require_module?: boolean }).require_module === true;

/**
 * The ES-module copy of a package that ships both (nodemailer 10, drizzle-orm), as the app's
 * import gets it: an app that imports it runs that copy, which no require cache lists. `esmOf`
 * maps the CommonJS file the app's directory resolves `specifier` to onto the ES module's; where
 * the package is not there, or ships no CommonJS, undefined.
 */
export async function esmCopy(specifier: string, esmOf: (cjs: string) => string | undefined): Promise<{ file: string; module: unknown } | undefined> {
  let cjs: string;
  try {
    cjs = createRequire(path.join(process.cwd(), 'index.js')).resolve(specifier);
  } catch {
    return undefined;
  }
  const file = esmOf(cjs);
  if (file === undefined) return undefined;
  // Node 20.19 and 22.12 on require() an ES module (the instance import() gives); before, import()
  // is kept from the CommonJS build's rewriting into require().
  const module = requiresModules
    ? createRequire(file)(file)
    : await (new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>)(pathToFileURL(file).href);
  return { file, module };
}
