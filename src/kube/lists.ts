// The answers to LIST requests, read defensively: a page with its snapshot's resourceVersion and
// continue token, and a collection of any resource as JSON (--node-check).
import type { ObjectList, Page } from './kube.js';

/** A list as the API server sends it; any field may be missing from a misbehaving server. */
export interface ListAnswer<T> {
  items?: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

/** One page of a list, with the resourceVersion of its snapshot and the token for the next. */
export function pageOf<T>(list: ListAnswer<T> | undefined): Page<T> {
  const meta = list?.metadata ?? {};
  const token = meta.continue ?? '';
  return {
    items: list?.items ?? [],
    resourceVersion: meta.resourceVersion ?? '',
    ...(token === '' ? {} : { continue: token }),
  };
}

/** A collection's items as JSON, and whether the server holds more than were sent. */
export function objectListOf(list: ListAnswer<unknown> | undefined): ObjectList {
  const token: unknown = list?.metadata?.continue;
  return {
    items: Array.isArray(list?.items) ? list.items : [],
    more: typeof token === 'string' && token !== '',
  };
}
