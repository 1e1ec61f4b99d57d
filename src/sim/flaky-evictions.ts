// simulate --eviction-errors: an API server that fails a share of evictions the way the one of issue
// 46 did: 500 "etcdserver: request timed out", half of them after the eviction was carried out (its
// answer lost). The PDB pre-flight's dry runs of evictions meet them too.
import type { Chaos } from './fake-api/http.js';
import { forkRandom } from './random.js';

/** What etcd's timeout looks like to kube-apiserver's clients. */
const ETCD_TIMEOUT = 'etcdserver: request timed out';

/** The chaos of --eviction-errors `share` (in (0, 1]), drawn from the run's seed. */
export function flakyEvictions(share: number, seed: number): Chaos {
  return {
    fraction: share,
    statuses: [500],
    method: 'POST',
    pathIncludes: '/eviction',
    committed: 0.5,
    message: ETCD_TIMEOUT,
    random: forkRandom(seed, 'eviction-errors'),
  };
}
