// Jest runs in native ESM mode: @kubernetes/client-node 1.x ships ESM only, and @swc/jest keeps our
// TypeScript as ES modules. Type checking is a separate step (`npm run typecheck`).
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // test/real-api needs a real kube-apiserver: `npm run test:real-api` starts one and runs them.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/real-api/'],
  testTimeout: 30000,
};
