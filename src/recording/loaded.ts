import { createRequire } from 'node:module';

const loadedModules = createRequire(__filename).cache;

/** Whether a module whose file matches `pattern` is in the require cache (ES modules importing CommonJS packages load them there too). */
export function isLoaded(pattern: RegExp): boolean {
  for (const file of Object.keys(loadedModules)) if (pattern.test(file)) return true;
  return false;
}
