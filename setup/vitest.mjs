// The profiler's matchers and failure report for vitest: `test: { setupFiles: ['express-web-profiler/vitest'] }`.
import { beforeEach, expect, onTestFailed } from 'vitest';
import testing from '../dist/testing/index.js';

expect.extend(testing.matchers);

beforeEach(() => {
  const since = Date.now();
  // A failed test shows the requests that answered 5xx or threw while it ran: their exceptions, last log lines and profiles.
  onTestFailed(async ({ task }) => {
    const report = await testing.failureReport(since);
    if (report !== undefined) task.result?.errors?.push({ name: 'express-web-profiler', message: report, stack: '' });
  });
});
