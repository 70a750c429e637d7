import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // PostgreSQL and MariaDB servers of the run's own, for the driver tests.
    globalSetup: ['test/database-servers.ts'],
    // Two cores: two workers, and generous timeouts for the long HTTP suites.
    maxWorkers: 2,
    // The tests browse profiles as a developer who has said nothing on this machine forwards
    // clients to the app; the access tests (security, proxy, the demo's link) set it off and use the key.
    env: { WEB_PROFILER_TRUST_LOCAL: '1' },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
