// The profiler's matchers and failure report for jest: `testEnvironment: 'express-web-profiler/jest-environment'`.
// Node's own environment, which also adds the matchers and, to a failed test, the requests that
// answered 5xx or threw while it ran (the profilers answer across jest's realms: see registry.ts).
const { TestEnvironment } = require(require.resolve('jest-environment-node', { paths: [process.cwd(), __dirname] }));
const { failureReport, matchers } = require('../dist/testing/index.js');

class WebProfilerEnvironment extends TestEnvironment {
  async handleTestEvent(event, state) {
    await super.handleTestEvent?.(event, state);
    if (event.name === 'setup') (event.runtimeGlobals?.expect ?? this.global.expect)?.extend(matchers);
    if (event.name === 'test_start') this.since = Date.now();
    if (event.name === 'test_done' && event.test.errors.length > 0) {
      const report = await failureReport(this.since ?? 0);
      if (report !== undefined) {
        const error = new Error(report);
        error.stack = report;
        event.test.errors.push(error);
      }
    }
  }
}

module.exports = WebProfilerEnvironment;
