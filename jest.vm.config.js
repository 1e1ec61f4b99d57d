// `npm run test:vm` (scripts/test-vm.mjs) runs these against the VMs and the control plane it
// started; VM_NODES says where the guests' agents are, REAL_API_KUBECONFIG where the API server is.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/vm/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 15 * 60_000,
};
