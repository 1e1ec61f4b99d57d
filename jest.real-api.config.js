// `npm run test:real-api` (scripts/test-real-api.mjs) runs these against a real kube-apiserver it
// started; REAL_API_KUBECONFIG and REAL_API_AUDIT_LOG say where it is.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/real-api/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120_000,
};
