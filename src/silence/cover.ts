// What the alert blocker does not count (issue 56): an alert that a live silence of ours covers,
// made for another node in its reboot cycle. That node's reboot makes the alert (its targets down,
// its DaemonSet pods not ready); it must not hold the next node back, as it pages nobody.
import type { SilenceApi } from './alertmanager.js';
import { covers } from './matchers.js';
import { SILENCE_CREATOR, nodeOfComment } from './silence-keeper.js';

/** Whether an alert's labels are covered. */
export type Cover = (labels: Readonly<Record<string, string>>) => boolean;

/** The cover of the active silences of ours for nodes other than `self`; throws when Alertmanager cannot say. */
export async function otherNodesCover(api: SilenceApi, self: string, signal?: AbortSignal): Promise<Cover> {
  const silences = (await api.list(signal)).filter((s) => {
    const node = nodeOfComment(s.comment);
    return s.createdBy === SILENCE_CREATOR && s.state === 'active' && node !== undefined && node !== self;
  });
  return (labels) => silences.some((s) => covers(s.matchers, labels));
}
