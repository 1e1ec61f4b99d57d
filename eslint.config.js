import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'charts/**', '.tools/**'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked.map((c) => ({ ...c, files: ['**/*.ts'] })),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      complexity: ['error', 10],
      'max-depth': ['error', 3],
      'max-params': ['error', 4],
      'no-console': 'off',
    },
  },
  {
    files: ['scripts/**/*.mjs'],
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' },
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true }],
      // Only src/kube/ (and the fake API server in src/sim/) talk to client-node.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@kubernetes/client-node', '@kubernetes/client-node/*'],
              message: 'only src/kube/ and src/sim/ import @kubernetes/client-node: use the Kube seam',
            },
          ],
        },
      ],
      // Only the entry point decides the process's fate.
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'exit',
          message: 'only the entry points (src/cli/cli.ts, kubectl-plugin.ts, main.ts) end the process',
        },
      ],
    },
  },
  {
    files: ['src/kube/**/*.ts', 'src/sim/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['src/cli/cli.ts', 'src/cli/kubectl-plugin.ts', 'src/cli/main.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      complexity: ['error', 15],
    },
  },
);
