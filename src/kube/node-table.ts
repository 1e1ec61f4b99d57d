// Every Node in a few hundred bytes: the rows of the Table kube-apiserver prints for `kubectl get
// nodes` (TABLE_ACCEPT, includeObject=None), read by column name. At 1,000 Nodes of a real cluster
// that is 228 KB, 9 KB compressed, where the list of the objects is 11 MB (0.8 MB compressed):
// cheap enough for the one node about to take a slot to judge the fleet's capacity itself, from what
// the kubelets and the node lifecycle controller write (DESIGN §12), on every hand-off.
import type { NodeRow, V1Node } from './kube.js';

/** The Table or list an answer holds cannot be read as rows (fail safe: the caller's gate holds). */
class NodeTableError extends Error {
  override readonly name = 'NodeTableError';
}

interface TableShape {
  kind?: unknown;
  apiVersion?: unknown;
  metadata?: { continue?: unknown; remainingItemCount?: unknown };
  columnDefinitions?: unknown;
  rows?: unknown;
  items?: unknown;
}

/**
 * Refuses an answer that is not the whole list of Nodes: another kind (a proxy's or an aggregated
 * API's answer, a Status), or one page of several (a continue token, items remaining). Rows that are
 * not all of the fleet must not read as a fleet with fewer nodes down (fail safe).
 */
function wholeNodeList(shape: TableShape): void {
  const table = shape.kind === 'Table' && /^meta\.k8s\.io\/v1(beta1)?$/.test(String(shape.apiVersion));
  const list = shape.kind === 'NodeList' && shape.apiVersion === 'v1';
  if (!table && !list)
    throw new NodeTableError(
      `the answer is neither a Table nor a list of Nodes (kind ${JSON.stringify(shape.kind ?? null)})`,
    );
  if (isPage(shape.metadata))
    throw new NodeTableError('the answer is one page of the Nodes, not all of them');
}

/** Is a list's metadata that of one page of several (a continue token, or items remaining)? */
function isPage(metadata: TableShape['metadata']): boolean {
  const more = metadata?.continue;
  const remaining = metadata?.remainingItemCount;
  return (typeof more === 'string' && more !== '') || (typeof remaining === 'number' && remaining > 0);
}

/** A row from kube's printed Status ("Ready", "NotReady,SchedulingDisabled", …) and Roles ("<none>"). */
function rowOf(name: string, status: string, roles: string): NodeRow {
  const words = status.split(',');
  const first = words[0];
  const readiness = first === 'Ready' || first === 'NotReady' ? first : 'Unknown';
  return {
    name,
    ready: readiness === 'Ready',
    readiness,
    unschedulable: words.includes('SchedulingDisabled'),
    roles: roles === '<none>' || roles === '' ? [] : roles.split(','),
  };
}

/** A row from a whole Node (a server that does not print Tables answers with a NodeList). */
export function rowOfNode(node: V1Node): NodeRow {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const readiness = ready === undefined ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady';
  const roles = Object.keys(node.metadata?.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .sort();
  return {
    name: node.metadata?.name ?? '',
    ready: readiness === 'Ready',
    readiness,
    unschedulable: node.spec?.unschedulable === true,
    roles,
  };
}

/** The column index of `name` in a Table's definitions; throws when it has none. */
function columnOf(defs: unknown[], name: string): number {
  const index = defs.findIndex(
    (d) => typeof d === 'object' && d !== null && (d as { name?: unknown }).name === name,
  );
  if (index < 0) throw new NodeTableError(`the node table has no ${name} column`);
  return index;
}

/** The rows of an answer to a node list asked for as TABLE_ACCEPT: a Table, or a plain NodeList. */
export function nodeRows(answer: unknown): NodeRow[] {
  const shape = (typeof answer === 'object' && answer !== null ? answer : {}) as TableShape;
  wholeNodeList(shape);
  if (shape.kind !== 'Table') {
    if (!Array.isArray(shape.items)) throw new NodeTableError('the list of Nodes has no items');
    return (shape.items as V1Node[]).map(rowOfNode);
  }
  if (!Array.isArray(shape.columnDefinitions) || !Array.isArray(shape.rows))
    throw new NodeTableError('the node table has no columns or no rows');
  const defs = shape.columnDefinitions as unknown[];
  const [name, status, roles] = ['Name', 'Status', 'Roles'].map((c) => columnOf(defs, c)) as [
    number,
    number,
    number,
  ];
  return (shape.rows as unknown[]).map((row) => {
    const cells = (row as { cells?: unknown }).cells;
    if (!Array.isArray(cells)) throw new NodeTableError('a row of the node table has no cells');
    const text = (i: number): string => {
      const cell: unknown = cells[i];
      if (typeof cell !== 'string')
        throw new NodeTableError(`a row of the node table has no text in column ${i}`);
      return cell;
    };
    return rowOf(text(name), text(status), text(roles));
  });
}
