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
    // expect.poll waits for a recorded outcome; its one-second default made polls timed assertions
    // that a loaded machine failed (focus moves in Chromium at load average 28).
    expect: { poll: { timeout: 20_000, interval: 100 } },
  },
});
