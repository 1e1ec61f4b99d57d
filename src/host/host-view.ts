// Which host the agent can read, from its configuration: the one decision of whether the package
// manager is checked at all (the agent and `kured-ts check --local` take it from here).
import { existsSync } from 'node:fs';
import { FsHostFiles, type HostFiles } from './host.js';

/** The host to read, or why it cannot be checked. */
export type HostView = { host: HostFiles } | { notChecked: string };

/**
 * An agent on the host itself (--host-exec direct) reads it at --host-root (default /); the chart's
 * agent for rebootMethod command (privileged, hostPID) through the mounts under --host-root (the
 * chart's /host). rebootMethod signal runs unprivileged without hostPID: it sees neither the host's
 * processes nor their locks. In a container (nsenter), --host-root / is the container's own files.
 */
export function hostView(
  config: { rebootMethod: 'command' | 'signal'; hostExec: 'nsenter' | 'direct'; hostRoot: string },
  exists: (path: string) => boolean = existsSync,
): HostView {
  if (config.hostExec === 'direct') return { host: new FsHostFiles(config.hostRoot) };
  if (config.rebootMethod === 'signal') {
    return {
      notChecked:
        "not checked: rebootMethod signal runs unprivileged without hostPID, so the host's package manager locks cannot be seen",
    };
  }
  if (config.hostRoot === '/' || !exists(config.hostRoot)) {
    return {
      notChecked: `not checked: the host's files are not mounted at --host-root ${config.hostRoot} (the kured-ts chart mounts them at /host)`,
    };
  }
  return { host: new FsHostFiles(config.hostRoot) };
}
