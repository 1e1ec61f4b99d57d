// The documentation's links: every relative link of README.md, CONTRIBUTING.md, docs/*.md and the
// chart's README leads to a file of the repository, every #anchor to a heading of its file (GitHub's
// anchors), and the README's relative links also work on the npm page, which resolves them against
// package.json's `repository`.
import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { posix } from 'node:path';
import { docFiles, githubSlug, headingAnchors, linkTargets, readRepoFile } from '../fakes/markdown.js';

/** What is wrong with one link target of `file`, or undefined when it resolves. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z+.-]*:/i.test(target)) return undefined; // https:, mailto:: not ours to check
  const hash = target.indexOf('#');
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = path === '' ? file : posix.normalize(posix.join(posix.dirname(file), path));
  if (resolved.startsWith('../')) return `${target}: leaves the repository`;
  if (!existsSync(new URL(`../../${resolved}`, import.meta.url))) return `${target}: no file ${resolved}`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith('.md')) return `${target}: an anchor into a file that is not markdown`;
  if (!headingAnchors(readRepoFile(resolved)).has(anchor))
    return `${target}: no heading #${anchor} in ${resolved}`;
  return undefined;
}

describe('the documentation links', () => {
  it.each([...docFiles(), 'charts/kured-ts/README.md'])(
    '%s: every relative link and #anchor resolves',
    (file) => {
      const targets = linkTargets(readRepoFile(file));
      const broken = targets.map((t) => brokenLink(file, t)).filter((b) => b !== undefined);
      expect(broken).toEqual([]);
    },
  );

  it('the README links every docs/*.md file and CONTRIBUTING.md', () => {
    const targets = new Set(linkTargets(readRepoFile('README.md')).map((t) => t.replace(/#.*/, '')));
    const unlinked = docFiles().filter((f) => f !== 'README.md' && !targets.has(f));
    expect(unlinked).toEqual([]);
  });

  it("the README's relative links work on npm: package.json names the GitHub repository", () => {
    const pkg = JSON.parse(readRepoFile('package.json')) as { repository?: { url?: string } };
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
  });
});

describe('GitHub heading anchors', () => {
  it.each([
    ['Per-group concurrency under the global cap', 'per-group-concurrency-under-the-global-cap'],
    ['Safety: what is guaranteed, and when', 'safety-what-is-guaranteed-and-when'],
    [
      'When a budget never allows: `--drain-fallback delete` (opt-in; default `none`)',
      'when-a-budget-never-allows---drain-fallback-delete-opt-in-default-none',
    ],
    [
      'Autoscaler protection (kured #1309, Azure/AKS #1773)',
      'autoscaler-protection-kured-1309-azureaks-1773',
    ],
    ["AKS's `undrainableNodeBehavior`", 'akss-undrainablenodebehavior'],
  ])('%s → #%s', (heading, anchor) => {
    expect(githubSlug(heading)).toBe(anchor);
  });

  it('numbers a repeated heading as GitHub does', () => {
    expect([...headingAnchors('# Tests\n\n## Tests\n\n```sh\n# not a heading\n```\n')]).toEqual([
      'tests',
      'tests-1',
    ]);
  });
});
