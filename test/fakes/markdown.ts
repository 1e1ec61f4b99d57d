// The repository's user documentation read as a reader sees it on GitHub (and on npm, which renders
// README.md the same way): fenced code blocks, inline code, links and headings with their anchors.
// Enough markdown for the docs tests; no markdown library.
import { readFileSync, readdirSync } from 'node:fs';

const root = new URL('../../', import.meta.url);

/** README.md, CONTRIBUTING.md and every docs/*.md, as paths from the repository root. */
export function docFiles(): string[] {
  const docs = readdirSync(new URL('docs/', root))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...docs];
}

/** A file of the repository as text; `path` from the repository root. */
export function readRepoFile(path: string): string {
  return readFileSync(new URL(path, root), 'utf8');
}

const FENCE = /^ {0,3}(```|~~~)(.*)$/;

/** The text split into fenced code blocks and the prose between them, in order. */
function parts(text: string): { code: boolean; lang: string; text: string }[] {
  const out: { code: boolean; lang: string; text: string }[] = [];
  let current = { code: false, lang: '', lines: [] as string[] };
  let fence = '';
  for (const line of text.split('\n')) {
    const match = FENCE.exec(line);
    if (!current.code && match !== null) {
      out.push({ code: false, lang: '', text: current.lines.join('\n') });
      fence = match[1] ?? '```';
      current = { code: true, lang: (match[2] ?? '').trim(), lines: [] };
    } else if (current.code && line.trim() === fence) {
      out.push({ code: true, lang: current.lang, text: current.lines.join('\n') });
      current = { code: false, lang: '', lines: [] };
    } else current.lines.push(line);
  }
  out.push({ code: current.code, lang: current.lang, text: current.lines.join('\n') });
  return out;
}

/** The fenced code blocks, with the language named after the fence ('' when none). */
export function codeBlocks(text: string): { lang: string; text: string }[] {
  return parts(text)
    .filter((p) => p.code)
    .map(({ lang, text: body }) => ({ lang, text: body }));
}

const CODE_SPAN = /(`+)([\s\S]*?[^`])\1(?!`)/g;

/** The prose outside fenced code blocks. */
function prose(text: string): string {
  return parts(text)
    .filter((p) => !p.code)
    .map((p) => p.text)
    .join('\n');
}

/** The contents of the inline code spans of the prose, whitespace (line breaks) as one space. */
export function codeSpans(text: string): string[] {
  return [...prose(text).matchAll(CODE_SPAN)].map((m) => (m[2] ?? '').replace(/\s+/g, ' ').trim());
}

/** Every link and image target of the prose (not those written inside code). */
export function linkTargets(text: string): string[] {
  const outsideCode = prose(text).replace(CODE_SPAN, 'code');
  return [...outsideCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1] ?? '',
  );
}

/** The anchors GitHub gives the headings of a markdown file (github-slugger, duplicates numbered). */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(text).split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const slug = githubSlug(heading[1] ?? '');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * GitHub's anchor for a heading: its text as rendered (code, emphasis and link syntax gone), lower
 * case, every character but letters, digits, `_`, `-` and spaces dropped, spaces made `-`.
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * The body of the section of `text` whose heading line begins with `heading` (`## Longhorn`, or a
 * heading's start as `### Issue 42: …` without its date), to the next heading of its level or above.
 * Throws when no heading begins so: a renamed section fails the test that reads it.
 */
export function markdownSection(text: string, heading: string): string {
  const escaped = heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const found = new RegExp(`^${escaped}.*$`, 'm').exec(text);
  if (found === null) throw new Error(`no heading ${heading}`);
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const body = text.slice(found.index + found[0].length);
  const next = new RegExp(`\\n#{1,${level}} `).exec(body);
  return next === null ? body : body.slice(0, next.index);
}
