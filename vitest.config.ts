import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // PostgreSQL and MariaDB servers of the run's own, for the driver tests.
    globalSetup: ['test/database-servers.ts'],
    // Two cores: two workers, and generous timeouts for the long HTTP suites.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
