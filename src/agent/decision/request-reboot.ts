// The reboot request itself: the host asked for the reboot the cycle record counts, and a request
// that failed recorded as not coming (so that the next pass retries without waiting the grace).
import type { CycleRecord } from '../../node/cycle.js';
import { errorText } from '../../text/error-text.js';
import type { Outcome } from '../outcome.js';
import type { Pass } from './pass.js';

/**
 * Asks the host for the reboot the record `request` counts (written by this agent). The request is
 * no longer this agent's unsent one once asked, whatever the answer.
 */
export async function requestReboot(pass: Pass, request: CycleRecord, reason: string): Promise<Outcome> {
  const outcome: Outcome = { kind: 'rebooting', reason };
  await pass.env.progress.report(outcome, pass.signal);
  await pass.notify('reboot', pass.config.messageTemplateReboot);
  try {
    pass.remember({ kind: 'attempt-sent' });
    await pass.deps.rebooter.reboot(pass.signal);
  } catch (err) {
    if (pass.signal?.aborted) throw err;
    await requestFailed(pass, request);
    return { kind: 'failed', reason: `reboot request failed: ${errorText(err)}; will retry` };
  }
  return outcome;
}

/**
 * A reboot request that failed is not coming: the record keeps the attempt but loses its request
 * time, so that the next pass retries without waiting REBOOT_GRACE_MS. Best effort: should the
 * write fail, the retry only waits the grace (never a second request for a reboot that may come).
 */
async function requestFailed(pass: Pass, request: CycleRecord): Promise<void> {
  const failed: CycleRecord = { ...request };
  delete failed.rebootRequestedAt;
  try {
    await pass.writeRecord(failed);
  } catch (err) {
    if (pass.signal?.aborted) throw err;
    pass.deps.logger.warn('cannot record a failed reboot request', {
      node: pass.config.nodeId,
      error: errorText(err),
    });
  }
}
