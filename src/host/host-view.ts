// Which host the agent can read, from its configuration: the one decision of whether the package
// manager is checked at all (the agent and `kured-ts check --local` take it from here).
import { existsSync } from 'node:fs';
import type { HostFiles } from './host.js';
import { ProcHost } from './proc-host.js';

/** Where the chart mounts the host's /var/lib, /var/cache and /run, read-only. */
export const HOST_ROOT = '/host';

/** The host to read, or why it cannot be checked. */
export type HostView = { host: HostFiles } | { notChecked: string };

/**
 * An agent on the host itself (--host-exec direct) reads it at /; the chart's agent for
 * rebootMethod command (privileged, hostPID) through the mounts under HOST_ROOT. rebootMethod signal
 * runs unprivileged without hostPID: it sees neither the host's processes nor their locks.
 */
export function hostView(
  config: { rebootMethod: 'command' | 'signal'; hostExec: 'nsenter' | 'direct' },
  exists: (path: string) => boolean = existsSync,
): HostView {
  if (config.hostExec === 'direct') return { host: new ProcHost({ root: '/' }) };
  if (config.rebootMethod === 'signal') {
    return {
      notChecked:
        "not checked: rebootMethod signal runs unprivileged without hostPID, so the host's package manager locks cannot be seen",
    };
  }
  if (!exists(HOST_ROOT)) {
    return {
      notChecked: `not checked: the host's files are not mounted at ${HOST_ROOT} (the kured-ts chart mounts them)`,
    };
  }
  return { host: new ProcHost({ root: HOST_ROOT }) };
}
