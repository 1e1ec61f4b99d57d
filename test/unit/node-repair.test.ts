import { describe, expect, it } from '@jest/globals';
import { repairRisk } from '../../src/node/repair.js';

const MINUTE = 60_000;

describe('the repair threshold of the node provider', () => {
  it.each<[string | undefined, number, string]>([
    ['aws:///us-east-1a/i-1', 30 * MINUTE, 'none'],
    ['aws:///us-east-1a/i-1', 31 * MINUTE, 'repair'],
    ['gce://proj/europe-west1-b/n', 30 * MINUTE, 'repair'],
    ['gce://proj/europe-west1-b/n', 10 * MINUTE, 'none'],
    ['gce://proj/europe-west1-b/n', 0, 'repair'],
    ['azure:///subscriptions/x', 60 * MINUTE, 'unknown'],
    ['', 60 * MINUTE, 'unknown'],
    [undefined, 60 * MINUTE, 'unknown'],
  ])('providerID %s with --post-reboot-timeout %d ms: %s', (providerID, timeoutMs, risk) => {
    expect(repairRisk(providerID, timeoutMs).risk).toBe(risk);
  });

  it('says what to set when the timeout is too long', () => {
    expect(repairRisk('gce://p/z/n', 0).reason).toBe(
      "--post-reboot-timeout 0 (no bound) is longer than GKE node auto-repair's 10m NotReady: a slow reboot may be repaired (the node replaced) mid-cycle; set it to 10m or less",
    );
  });
});
