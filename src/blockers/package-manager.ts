// PackageManagerBlocker: no cordon and no reboot while the host's package manager is at work (kured
// #403: the sentinel appears before dpkg has finished; a reboot then leaves "dpkg was interrupted").
// Judged before the lock and again right before the reboot (a run that started during the drain
// ends the cycle instead: the slot goes to the next node while this one waits).
//
// How long: --package-manager-wait, on this agent's monotonic clock from the first pass that found
// it busy. Past it the node goes on waiting, and says so (the reason changes, so the RebootBlocked
// Event and the status say it anew): never a reboot while a lock is held.
//
// Fail safe, and why: a lock table that cannot be read (and no pid file that says busy) is unknown,
// and unknown blocks, but only for --package-manager-wait: a dpkg run lasts minutes, while a host
// whose /proc/locks stays unreadable would otherwise never get its security reboot. A lock known
// held blocks without end.
import { monotonicMs, type Clock } from '../clock/clock.js';
import type { HostFiles } from '../host/host.js';
import { readPackageManagers } from '../host/package-managers.js';
import { shortDuration } from '../text/duration.js';
import type { Blocker, Verdict } from './blocker.js';

export interface PackageManagerBlockerOptions {
  host: HostFiles;
  clock: Clock;
  /** --package-manager-wait in ms. */
  waitMs: number;
}

export class PackageManagerBlocker implements Blocker {
  readonly name = 'package-manager';
  readonly beforeReboot = true;
  /** Since when (monotonic ms) the host has been busy, or unknown; undefined: it was not at the last check. */
  private since: { state: 'busy' | 'unknown'; at: number } | undefined;

  constructor(private readonly options: PackageManagerBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { host, clock, waitMs } = this.options;
    const found = await readPackageManagers(host, signal);
    if (found.state === 'idle' || found.state === 'none') {
      this.since = undefined;
      return { blocked: false };
    }
    const now = monotonicMs(clock);
    if (this.since?.state !== found.state) this.since = { state: found.state, at: now };
    const waited = now - this.since.at;
    const wait = shortDuration(waitMs);
    if (found.state === 'busy') {
      return waited < waitMs
        ? {
            blocked: true,
            reason: `package manager at work: ${found.holder}; waiting up to ${wait} (--package-manager-wait)`,
          }
        : {
            blocked: true,
            reason: `package manager at work for over ${wait} (--package-manager-wait): ${found.holder}; still waiting: no reboot while it holds its lock`,
          };
    }
    if (waited < waitMs) {
      return {
        blocked: true,
        reason: `package manager not checked: ${found.why}; waiting up to ${wait} (--package-manager-wait), then going on unless a lock is known held`,
      };
    }
    return { blocked: false };
  }
}
