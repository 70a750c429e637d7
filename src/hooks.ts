// `node --import express-web-profiler/hooks app.js` (an ES module app or a CommonJS one; or
// --require): zod's and valibot's parse functions are watched from the moment they load, before
// any of the app's imports (see instruments/validation-hooks.ts), so that a validation the app
// answers itself is recorded. The profiler does the same for zod when it starts, for a zod the app
// loads after it. Needs module.registerHooks (Node 22.15, 23.5 and later).
import { watchValidations } from './instruments/validation-hooks.js';

if (!watchValidations({ valibot: true })) {
  process.emitWarning(`express-web-profiler/hooks needs module.registerHooks (Node 22.15 and later; this is ${process.version}): validations of zod and of ES module valibot are not recorded`, { code: 'WEB_PROFILER_HOOKS' });
}
