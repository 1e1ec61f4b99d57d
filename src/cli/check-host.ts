// `kured-ts check`'s line for the host's package manager: judged as the agent judges it where the
// host can be read (with --local, on the node), else "not checked" with the reason.
import { firstBlock } from '../blockers/blocker.js';
import { PackageManagerBlocker } from '../blockers/package-manager.js';
import type { Clock } from '../clock/clock.js';
import type { Config } from '../config/config.js';
import { hostView, type HostView } from '../host/host-view.js';
import type { CheckItem } from './check-report.js';

const NAME = 'package-manager';

/** The package-manager line; `io.hostView` replaces hostView(config) (tests). */
export async function evaluatePackageManager(
  options: { config: Pick<Config, 'rebootMethod' | 'hostExec' | 'packageManagerWaitMs'>; local?: boolean },
  io: { clock: Clock; hostView?: HostView },
  signal: AbortSignal,
): Promise<CheckItem> {
  const { config } = options;
  if (options.local !== true) {
    return {
      name: NAME,
      verdict: 'skipped',
      detail: 'not checked: the host is read on the node itself only (kured-ts check --local there)',
    };
  }
  const view = io.hostView ?? hostView(config);
  if ('notChecked' in view) return { name: NAME, verdict: 'skipped', detail: view.notChecked };
  const blocker = new PackageManagerBlocker({
    host: view.host,
    clock: io.clock,
    waitMs: config.packageManagerWaitMs,
  });
  // through firstBlock, so that a read that fails blocks exactly as it does in the agent
  const verdict = await firstBlock([blocker], signal);
  return verdict.blocked
    ? { name: NAME, verdict: 'blocks', detail: verdict.reason }
    : { name: NAME, verdict: 'ok', detail: 'no package manager at work' };
}
