// What the alert blocker does not count (issue 56): an alert that a live silence of ours covers,
// made for another node in its reboot cycle. That node's reboot makes the alert (its targets down,
// its DaemonSet pods not ready); it must not hold the next node back, as it pages nobody.
import type { SilenceApi } from './alertmanager.js';
import { covers, forNode, type Matcher } from './matchers.js';
import { SILENCE_CREATOR, nodeOfComment } from './silence-keeper.js';

/** Whether an alert's labels are covered. */
export type Cover = (labels: Readonly<Record<string, string>>) => boolean;

/** A silence's matchers in a form that compares equal whatever their order. */
function key(matchers: readonly Matcher[]): string {
  return JSON.stringify(
    matchers
      .map((m) => [m.name, m.value, m.isRegex, m.isEqual])
      .sort((a, b) => String(a).localeCompare(String(b))),
  );
}

/**
 * The cover of the active silences of ours for nodes other than `self`; throws when Alertmanager cannot
 * say. Only a silence whose matchers are exactly one of `sets` for the node it names counts: whoever
 * may write silences cannot make the blocker ignore more than that node's own alerts by writing one
 * in our name with wider matchers.
 */
export async function otherNodesCover(
  api: SilenceApi,
  self: string,
  sets: readonly (readonly Matcher[])[],
  signal?: AbortSignal,
): Promise<Cover> {
  const silences = (await api.list(signal)).filter((s) => {
    const node = nodeOfComment(s.comment);
    if (s.createdBy !== SILENCE_CREATOR || s.state !== 'active' || node === undefined || node === self)
      return false;
    const written = key(s.matchers);
    return sets.some((set) => key(forNode(set, node)) === written);
  });
  return (labels) => silences.some((s) => covers(s.matchers, labels));
}
