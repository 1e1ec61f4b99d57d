// The measured figures the README, docs/, the CHANGELOG and the chart's values.yaml quote, checked
// against bench/RESULTS.md rather than trusted: each quote is found word for word in its file, and
// every number in it appears in the RESULTS section it comes from (as measured, or rounded to the
// precision the quote gives). A figure re-measured and republished makes the quotes that lag behind
// fail here; a quote reworded must be reworded here too, so that no measured number goes unchecked.
import { describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { markdownSection, readRepoFile } from '../fakes/markdown.js';

interface Quote {
  file: string;
  /** Words of the file, whitespace-insensitive. */
  says: string;
  /** The heading of bench/RESULTS.md's section the numbers come from (its start). */
  section: string;
}

const NODE_24 = '### Node 24: what the supported runtime costs';
const COORDINATOR = "### The coordinator's memory, for the chart's request";
const WORKERS = '### bench:real with the agents in worker threads';

const QUOTES: Quote[] = [
  {
    file: 'README.md',
    says: 'Node 24 is about 83 MB idle and 93 MB at the peak of a 100-pod drain (61 and 70 MB on Node 20',
    section: NODE_24,
  },
  {
    file: 'charts/kured-ts/values.yaml',
    says: 'the idle agent holds about 83 MB resident and 93 MB at # the peak of a 100-pod drain',
    section: NODE_24,
  },
  {
    file: 'charts/kured-ts/values.yaml',
    says: 'the leader holds about 73 MB resident over 10 nodes, # 83 MB over 1,000 and 99 MB over 5,000',
    section: COORDINATOR,
  },
  { file: 'CHANGELOG.md', says: 'grows from about 61 MB to 83 MB with it', section: NODE_24 },
  {
    file: 'CHANGELOG.md',
    says: 'its leader holds 73 MB over 10 nodes and 99 MB over 5,000',
    section: COORDINATOR,
  },
  {
    file: 'docs/patch-night.md',
    says: 'rebooted 42 of 1,000 nodes in 40 minutes of wall time (about 6,800 requests per rebooted node)',
    section: '### Patch night at 1,000 nodes: the coordinated queue',
  },
  {
    file: 'docs/patch-night.md',
    says: 'with 1,000 Node objects, 8 agents at C=1 made the server answer 33 MB of node lists per hand-off',
    section: '### Patch night on a real kube-apiserver v1.32',
  },
  {
    file: 'docs/patch-night.md',
    says: '| 100 | 142 → 52 | 411 → 197 | 1.23 → 1.23 | 0 | 0 |',
    section: '### Issue 42: a reboot cycle close to its floor',
  },
  {
    file: 'docs/patch-night.md',
    says: '| 1,000 | 184 → 55 | 504 → 210 | 1.02 → 1.02 | 0 | 0 |',
    section: '### Issue 42: a reboot cycle close to its floor',
  },
  {
    file: 'docs/patch-night.md',
    says: 'One node alone in a 3-node cluster: 93 → 30 requests for its whole cycle',
    section: '### Issue 42: a reboot cycle close to its floor',
  },
  {
    file: 'docs/patch-night.md',
    says: 'at 100 nodes 54 requests and 182 KB per node, one node alone 31',
    section: '#### Issue 42 after merging main',
  },
  {
    file: 'docs/fleet-policy.md',
    says: '1,124 requests more in a 4h40m wave, 0.1 MB',
    section: '### Other operators, silences, readiness taints',
  },
  {
    file: 'docs/advisor.md',
    says: '228 KB, 9 KB compressed, at 1,000 Nodes, where the list of the Nodes is 11,486 KB (853 KB compressed); 1,137 KB, 40 KB compressed, at 5,000',
    section: WORKERS,
  },
  {
    file: 'docs/patch-night.md',
    says: 'At 5,000 nodes on the real-API bench, with 5,000 agents starting, the first list took longer than a lease',
    section: WORKERS,
  },
  {
    file: 'docs/storage.md',
    says: 'a quadratic expression over 929 KB: the loop was held at most 21 ms',
    section: "### Issue 54 (the storage system's word) and issue 55 (bounded cost)",
  },
];

const squash = (text: string): string => text.replace(/\s+/g, ' ');
const results = readRepoFile('bench/RESULTS.md');

/** The numbers of a text ("1,124", "83.1", "4h40m" gives 4 and 40). */
function numbers(text: string): number[] {
  return [...text.matchAll(/\d[\d,]*(?:\.\d+)?/g)].map((m) => Number(m[0].replace(/,/g, '')));
}

/** Does `claimed` (as written, with `decimals` places) stand for one of `measured`? */
function found(claimed: number, decimals: number, measured: readonly number[]): boolean {
  const scale = 10 ** decimals;
  return measured.some((m) => m === claimed || Math.round(m * scale) / scale === claimed);
}

describe('measured figures in the docs, checked against bench/RESULTS.md', () => {
  it.each(QUOTES.map((q) => [`${q.file}: "${q.says.slice(0, 60)}…"`, q] as const))('%s', (_name, quote) => {
    expect(squash(readRepoFile(quote.file))).toContain(squash(quote.says));
    const measured = numbers(markdownSection(results, quote.section));
    const missing = [...quote.says.matchAll(/\d[\d,]*(?:\.(\d+))?/g)]
      .filter((m) => !found(Number(m[0].replace(/,/g, '')), m[1]?.length ?? 0, measured))
      .map((m) => m[0]);
    expect({ quote: quote.says, missing }).toEqual({ quote: quote.says, missing: [] });
  });

  it("the README's memory request and limit are the chart's", () => {
    const values = load(readRepoFile('charts/kured-ts/values.yaml')) as {
      resources: { requests: { memory: string }; limits: { memory: string } };
    };
    const says = squash(readRepoFile('README.md'));
    const request = values.resources.requests.memory.replace('Mi', ' Mi');
    const limit = values.resources.limits.memory.replace('Mi', ' Mi');
    expect(says).toContain(`the chart requests ${request} and limits it to ${limit}`);
  });
});
