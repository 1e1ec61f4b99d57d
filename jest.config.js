// Jest runs in native ESM mode: @kubernetes/client-node 1.x ships ESM only, and @swc/jest keeps our
// TypeScript as ES modules. Type checking is a separate step (`npm run typecheck`).
import { availableParallelism } from 'node:os';

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
  // test/real-api needs a real kube-apiserver (`npm run test:real-api` starts one), test/vm real
  // nodes (`npm run test:vm` boots them as VMs): those scripts run them.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/real-api/', '<rootDir>/test/vm/'],
  testTimeout: 30000,
  // jest's default is one worker fewer than the cores: a single worker on a 2-core machine. Much of the
  // suite waits on real timers, sockets and processes (the agent's deadlines, the coordinator's lease,
  // Helm, the CLI); a third worker's tests fill those waits. Measured on 2 cores: 3 workers beat 2.
  maxWorkers: Math.max(3, availableParallelism() - 1),
  // The bundle the CLI, chart and image tests start as processes: built once, before every worker,
  // when it is older than its sources (npm test has just built it).
  globalSetup: '<rootDir>/scripts/fresh-bundle.mjs',
};
