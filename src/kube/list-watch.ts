// What a reflector (reflector.ts) can follow: the lists and watches kured-ts uses, each one
// ListWatch. These are the only callers of the Kube interface's watch methods (a rule of
// scripts/check-imports.mjs): every watch then gets the reflector's back-off, relist and blindness.
import { isGone, isNotFound } from './errors.js';
import type { Kube, V1DaemonSet, V1Node, V1Pod } from './kube.js';
import type { ListWatch, Listed } from './reflector.js';

/** Nodes per page of a list of every Node (client-go's reflector pages by 500 too). */
const PAGE_SIZE = 500;

/** One object, or none when the GET answers 404. */
async function single<T extends { metadata?: { resourceVersion?: string } }>(
  get: () => Promise<T>,
): Promise<Listed<T>> {
  try {
    const object = await get();
    return { items: [object], resourceVersion: object.metadata?.resourceVersion ?? '' };
  } catch (err) {
    // gone: an empty list, watched from the start (the server then sends it as ADDED if it returns)
    if (isNotFound(err)) return { items: [], resourceVersion: '' };
    throw err;
  }
}

/**
 * The watch of one object, from the version its GET answered. That version is the object's own: once
 * enough else has changed it is no longer in the API server's history (kube-apiserver's watch cache
 * keeps about 75 s of a busy cluster), and a watch from it is refused 410 Expired; the GET after that
 * answers the same version for as long as the object stays as it is, so the reflector would read and
 * be refused in a loop, blind (bench:real's forged-turn storm: every waiter's follow of a NotReady
 * Node failed so). client-go lists with a field selector instead, which answers the collection's
 * version; a GET is what the agent's RBAC grants on the lock's DaemonSet. So a version once refused is
 * watched from now instead (no resourceVersion: the server sends the object as ADDED, then its
 * changes).
 */
function fromNowOnceExpired<T>(watch: ListWatch<T>['watch']): ListWatch<T>['watch'] {
  let expired: string | undefined;
  return async (resourceVersion, onEvent, signal) => {
    const from = resourceVersion === expired ? '' : resourceVersion;
    try {
      await watch(
        from,
        (event) => {
          // the only error kube-apiserver streams is 410 Expired (the reflector relies on it too)
          if (event.type === 'ERROR') expired = from;
          onEvent(event);
        },
        signal,
      );
    } catch (err) {
      if (isGone(err)) expired = from;
      throw err;
    }
  };
}

/**
 * The Nodes (those `labelSelector` selects), listed page by page (`pageSize` a page, each page with
 * its own deadline: at 5,000 Nodes of 10 KB one unpaginated answer is 50 MB and may not arrive
 * within one), every page cut from the first page's snapshot.
 */
export function nodesListWatch(
  kube: Kube,
  options: { labelSelector?: string; pageSize?: number } = {},
): ListWatch<V1Node> {
  const selector = options.labelSelector === undefined ? {} : { labelSelector: options.labelSelector };
  const limit = options.pageSize ?? PAGE_SIZE;
  return {
    what: options.labelSelector === undefined ? 'the Nodes' : `the Nodes ${options.labelSelector}`,
    list: async (signal) => {
      const items: V1Node[] = [];
      let page = await kube.listNodesPage({ ...selector, limit }, signal);
      const resourceVersion = page.resourceVersion;
      for (;;) {
        items.push(...page.items);
        if (page.continue === undefined) return { items, resourceVersion };
        page = await kube.listNodesPage({ ...selector, limit, continue: page.continue }, signal);
      }
    },
    watch: (resourceVersion, onEvent, signal) =>
      kube.watchNodes(onEvent, { ...selector, resourceVersion, signal }),
  };
}

/** One Node: a GET, and a watch of that name only. */
export function nodeListWatch(
  kube: Kube,
  name: string,
  options: { timeoutSeconds?: number } = {},
): ListWatch<V1Node> {
  return {
    what: `Node ${name}`,
    list: (signal) => single(() => kube.getNode(name, signal)),
    watch: fromNowOnceExpired((resourceVersion, onEvent, signal) =>
      kube.watchNodes(onEvent, {
        ...(resourceVersion === '' ? {} : { resourceVersion }),
        fieldSelector: `metadata.name=${name}`,
        signal,
        ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
      }),
    ),
  };
}

/**
 * The pods on one node (fieldSelector spec.nodeName: an agent's own, for the drain, the blockers and
 * the readiness of its DaemonSet pods), listed page by page, every page from the first's snapshot.
 */
export function podsListWatch(
  kube: Kube,
  node: string,
  options: { timeoutSeconds?: number; pageSize?: number } = {},
): ListWatch<V1Pod> {
  const fieldSelector = `spec.nodeName=${node}`;
  const limit = options.pageSize ?? PAGE_SIZE;
  return {
    what: `the pods of Node ${node}`,
    list: async (signal) => {
      const items: V1Pod[] = [];
      let page = await kube.listPodsPage(undefined, { fieldSelector, limit }, signal);
      const resourceVersion = page.resourceVersion;
      for (;;) {
        items.push(...page.items);
        if (page.continue === undefined) return { items, resourceVersion };
        page = await kube.listPodsPage(undefined, { fieldSelector, limit, continue: page.continue }, signal);
      }
    },
    watch: (resourceVersion, onEvent, signal) =>
      kube.watchPods(onEvent, {
        resourceVersion,
        fieldSelector,
        signal,
        ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
      }),
  };
}

/** One DaemonSet (the lock's): a GET, and a watch of that name only. */
export function daemonSetListWatch(kube: Kube, namespace: string, name: string): ListWatch<V1DaemonSet> {
  return {
    what: `DaemonSet ${namespace}/${name}`,
    list: (signal) => single(() => kube.getDaemonSet(namespace, name, signal)),
    watch: fromNowOnceExpired((resourceVersion, onEvent, signal) =>
      kube.watchDaemonSet(namespace, name, onEvent, {
        ...(resourceVersion === '' ? {} : { resourceVersion }),
        signal,
      }),
    ),
  };
}
