import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const NO_NEW_API_ERROR = {
  selector: "NewExpression[callee.name='ApiError']",
  message: 'Throw a named factory of `errors` (src/platform/errors.ts); add one there for a new case.',
};

export default tseslint.config(
  { ignores: ['node_modules/', '.cache/', 'data/', 'dist/', 'scratch/', 'docs/', 'packages/*/dist/', 'packages/sdk/src/openapi.ts', 'packages/cli/src/operator-openapi.ts', 'src/modules/console/web/openapi/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', Blob: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // One error catalogue: errors are built by the named factories in src/platform/errors.ts only.
    files: ['src/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    ignores: ['src/platform/errors.ts'],
    rules: {
      'no-restricted-syntax': ['error', NO_NEW_API_ERROR],
    },
  },
  {
    // SQL lives in stores: a module's other files call its store (README: Architecture).
    files: ['src/modules/**/*.ts'],
    ignores: ['src/modules/**/store.ts', 'src/modules/**/*-store.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        NO_NEW_API_ERROR,
        { selector: "CallExpression[callee.property.name='query']", message: "SQL belongs in the module's store.ts; call a function of the store." },
      ],
    },
  },
  {
    // Modules meet only at their surface: another module's index.ts (its public functions and types) or
    // schemas.ts (its TypeBox schemas). Its store, service and internals stay its own (README: Architecture).
    files: ['src/modules/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./(?!\\.)[^/]+/(?!(index|schemas)\\.ts$)',
              message: "Import another module through its index.ts (or schemas.ts); add the export there if it is part of the module's surface.",
            },
          ],
        },
      ],
    },
  },
  {
    // The composition root builds modules from their surface too; no store outside its own module.
    files: ['src/*.ts', 'src/platform/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '/modules/[^/]+/([a-z-]*-)?store\\.ts$', message: "A module's store is its own; use its index.ts." }] }],
    },
  },
  {
    // The console's browser app (src/modules/console/web, TSX with Preact): browser globals, no Node.
    files: ['src/modules/console/web/**/*.{ts,tsx}', 'src/modules/holder/web/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^node:', message: 'The console runs in the browser.' }] }],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'require', '__dirname', 'global'],
    },
  },
  {
    // The SDK runs on Node, Deno, Bun and browsers: Web APIs only (packages/sdk/README.md).
    files: ['packages/sdk/src/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^node:', message: 'The SDK uses Web APIs only (fetch, Web Crypto).' }] }],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'require', '__dirname', 'global'],
    },
  },
);
