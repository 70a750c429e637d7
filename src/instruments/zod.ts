import { dotted, type FieldError } from '../recording/validations.js';

/** The classic parse functions every schema method (and z.parse() and its kind) calls, by whether they answer a failure (safe) or throw it. */
export const ZOD_PARSERS = { safeParse: true, safeParseAsync: true, parse: false, parseAsync: false } as const;

/** zod 4's classic parse module, CommonJS and ES module builds, as Node names them. */
export const ZOD_PARSE_MODULE = /\/node_modules\/zod\/v4\/classic\/parse\.c?js$/;

/**
 * A failure's issues: a failed safeParse's result builds its error only when `error` is read
 * (zod 4.6), which is done when the request is captured; a thrown ZodError has them.
 */
export function zodIssues(failure: unknown): FieldError[] {
  const f = failure as { success?: unknown; error?: { issues?: unknown }; issues?: unknown };
  const issues = f.success === false ? f.error?.issues : f.issues;
  return Array.isArray(issues) ? issues.map((i: { path?: unknown; message?: unknown; code?: unknown }) => ({ field: dotted(i.path), message: String(i.message ?? ''), code: typeof i.code === 'string' ? i.code : undefined })) : [];
}

const ASSIGNED = new RegExp(`^(exports\\.|export const )(${Object.keys(ZOD_PARSERS).join('|')}) = (.+);$`, 'gm');

/**
 * zod 4: every schema's parse methods call the functions of one module (v4/classic/parse), whose
 * exports are frozen in the CommonJS build and bindings in the ES module one: nothing outside can
 * wrap them once it has loaded. As it loads (see hooks.ts), each of its parse functions is handed
 * to `watch` (globalThis[key]) as it is made: each failure is then noted, whether the app reads its
 * error or not; a passing parse pays one call of ours.
 */
export function watchedZodSource(source: string, key: string): string {
  return source.replace(ASSIGNED, (_line, how: string, name: string, made: string) => `${how}${name} = (globalThis[Symbol.for(${JSON.stringify(key)})] ?? ((l, n, f) => f))('zod', ${JSON.stringify(name)}, ${made});`);
}
