// The one Config tests start from: kured-ts's own defaults, made safe to run on a developer's machine.
import type { Config } from '../../src/config/config.js';
import { defaultConfig } from '../../src/config/parse.js';

/**
 * defaultConfig() (what an empty command line gives) with what a test must never inherit from it:
 * node n1; a sentinel that does not exist; `/bin/false` instead of `systemctl reboot`, run directly
 * instead of through nsenter into PID 1; the listener on an ephemeral loopback port; eviction retries
 * every 50 ms instead of 5 s. `overrides` win.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...defaultConfig(),
    nodeId: 'n1',
    rebootSentinel: '/nonexistent/reboot-required',
    rebootCommand: ['/bin/false'],
    hostExec: 'direct',
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    evictionRetryDelayMs: 50,
    ...overrides,
  };
}
