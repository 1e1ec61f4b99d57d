// Paginated lists as kube-apiserver serves them from etcd (`limit` and `continue`): each page is cut
// from the same snapshot, the one of the first page's resourceVersion; its continue token carries
// that version and the last key served, and is refused with 410 Expired once the history no longer
// reaches back to it (the client lists anew). A list with resourceVersion=0 comes from the watch
// cache, which in v1.32 ignores `limit` and answers the whole list.
import type { Registry } from './registry.js';
import type { ObjectFilter } from './selectors.js';
import type { ResourceDef, StoredObject } from './resources.js';
import { apiError, badRequest } from './status.js';
import { objectKey } from './store.js';

/** One page: its items, the snapshot's resourceVersion and, when more follow, the token for them. */
export interface Page {
  items: StoredObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

interface Token {
  rv: number;
  /** The key (namespace/name) of the last item served. */
  after: string;
}

function encode(token: Token): string {
  return Buffer.from(JSON.stringify(token)).toString('base64url');
}

function decode(text: string): Token {
  try {
    const t = JSON.parse(Buffer.from(text, 'base64url').toString()) as Partial<Token>;
    if (typeof t.rv === 'number' && typeof t.after === 'string') return { rv: t.rv, after: t.after };
  } catch {
    // answered below
  }
  throw badRequest(`continue key is not valid: ${text}`);
}

function parseLimit(text: string | null): number | undefined {
  if (text === null || text === '') return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw badRequest(`invalid limit: ${text}`);
  return n === 0 ? undefined : n;
}

/** The list a GET of a collection answers, paged when it asks for a limit or continues one. */
export function listPage(
  registry: Pick<Registry, 'list' | 'listAt'>,
  request: {
    def: ResourceDef;
    namespace: string | undefined;
    filter: ObjectFilter;
    query: URLSearchParams;
    now: number;
  },
): Page {
  const { def, namespace, filter, query } = request;
  const limit = parseLimit(query.get('limit'));
  const token = query.get('continue');
  if (token === null || token === '') {
    const items = registry.list(def, namespace, filter);
    if (limit === undefined || query.get('resourceVersion') === '0') {
      return { items, resourceVersion: String(request.now) };
    }
    return cut(items, limit, request.now);
  }
  if (query.get('resourceVersion') !== null && query.get('resourceVersion') !== '')
    throw badRequest('specifying resource version is not allowed when using continue');
  const { rv, after } = decode(token);
  const snapshot = registry.listAt(def, namespace, filter, rv);
  if (snapshot === undefined) {
    throw apiError(
      410,
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response to get an inconsistent list.',
      undefined,
      'Expired',
    );
  }
  return cut(
    snapshot.filter((o) => objectKey(o) > after),
    limit,
    rv,
  );
}

function cut(items: StoredObject[], limit: number | undefined, rv: number): Page {
  if (limit === undefined || items.length <= limit) return { items, resourceVersion: String(rv) };
  const page = items.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page,
    resourceVersion: String(rv),
    ...(last === undefined ? {} : { continue: encode({ rv, after: objectKey(last) }) }),
    remainingItemCount: items.length - limit,
  };
}
