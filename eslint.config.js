import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Import boundaries (docs/architecture.md, Layers). A relative import that climbs more levels than
 * the importing file sits below its package root has left the package. ESLint's patterns see only
 * the import string, so one block per folder depth says how many `../` leave the package.
 */
const TEST_FILES = ['**/*.test.ts', '**/*.test.tsx'];
const DEPTHS = [1, 2, 3, 4, 5];
/** `../` repeated more than `depth` times, not followed by one of the allowed top-level folders. */
const leaving = (depth, allowed = []) => `^(\\.\\./){${depth + 1}}(\\.\\./)*(?!\\.\\./${allowed.map((a) => `|${a}`).join('')})`;

/** services/<name>/src/**: only @tasksvc/proto, @tasksvc/runtime and libraries from outside the service. */
const servicePatterns = (depth) => [
  { regex: leaving(depth), message: 'A service reaches other code only through @tasksvc/proto and @tasksvc/runtime (test support belongs under test/).' },
  { regex: '^@tasksvc/(?!proto(/|$)|runtime(/|$))', message: 'Services do not import each other: put the contract in @tasksvc/proto.' },
];
const serviceBoundaries = DEPTHS.map((depth) => ({
  files: [`services/*/src/${'*/'.repeat(depth - 1)}*.ts`],
  ignores: TEST_FILES,
  rules: { 'no-restricted-imports': ['error', { patterns: servicePatterns(depth) }] },
}));

/** A service's SQL lives in its repositories, src/db/ (docs/architecture.md, Data layer); the runtime's own (pool, outbox) is the runtime's. */
const sqlInRepositories = DEPTHS.map((depth) => ({
  files: [`services/*/src/${'*/'.repeat(depth - 1)}*.ts`],
  ignores: [...TEST_FILES, 'services/*/src/db/**', 'services/runtime/**'],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [...servicePatterns(depth), { regex: '^(drizzle-orm|pg)(/|$)', message: 'SQL belongs in the service\'s repositories (src/db/): call a function there.' }],
    }],
  },
}));

/** ui/src/**: the UI's own files and proto (contracts, calendar domain) only. */
const uiBoundaries = DEPTHS.map((depth) => ({
  files: [`ui/src/${'*/'.repeat(depth - 1)}*.{ts,tsx}`],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: [
        { regex: leaving(depth, ['proto/src/']), message: 'The UI imports only its own files and proto (contracts and the calendar domain).' },
        { regex: '^@tasksvc/(?!proto(/|$))', message: 'The UI imports only proto among the workspace packages.' },
      ],
    }],
  },
}));

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.data/**', '.cache/**', 'charts/**', 'tools/k8s/.bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/only-throw-error': 'off',
    },
  },
  ...serviceBoundaries,
  ...sqlInRepositories,
  ...uiBoundaries,
  {
    files: ['ui/src/**/*.tsx'],
    rules: {
      // Solid fills `let el; <div ref={el}>` at render time: the variable is assigned by the compiler.
      'no-unassigned-vars': 'off',
      // Solid event handlers may be async; nothing awaits their result.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { attributes: false } }],
    },
  },
  { files: ['ui/public/sw.js'], languageOptions: { globals: { self: 'readonly', caches: 'readonly', fetch: 'readonly', Request: 'readonly', Response: 'readonly' } } },
  { files: ['**/*.mjs', '**/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } } },
);
