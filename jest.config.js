// Jest runs in native ESM mode: @kubernetes/client-node 1.x ships ESM only, and @swc/jest keeps our
// TypeScript as ES modules. Type checking is a separate step (`npm run typecheck`).
import { availableParallelism, totalmem } from 'node:os';

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
  // Helm, the CLI); other workers' tests fill those waits. Measured on 2 idle cores, the whole jest
  // run: 3 workers 182 s, 4 workers 147-159 s, 5 workers 131 s, 6 134 s, 8 137 s. A worker holds up
  // to about 450 MB: at most one per 700 MB of the machine's memory.
  maxWorkers: Math.max(1, Math.min(availableParallelism() + 3, Math.floor(totalmem() / (700 * 1024 * 1024)))),
  // The bundle the CLI, chart and image tests start as processes: built once, before every worker,
  // when it is older than its sources (npm test has just built it).
  globalSetup: '<rootDir>/scripts/fresh-bundle.mjs',
};
