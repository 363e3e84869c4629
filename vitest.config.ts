import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['proto/**/*.test.ts', 'services/**/*.test.ts', 'operator/**/*.test.ts', 'tools/**/*.test.ts', 'ui/test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    globalSetup: ['tools/testenv/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    teardownTimeout: 30_000,
  },
});
