import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A PostgreSQL server of the run's own, for the pg tests.
    globalSetup: ['test/postgres-setup.ts'],
    // Two cores: two workers, and generous timeouts for the long HTTP suites.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
