// `npm run test:quick`: the unit tests alone (test/unit: hand-written fakes, in-memory, no bundle), for
// the loop between two edits; `npm test` runs them with everything else.
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
  // the unit tests start no bundle: no build before them
  globalSetup: undefined,
};
