// Server-side printing, as kube-apiserver answers a list asked for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (what `kubectl get` shows): a row of cells
// per object, the columns described once, and per row the object itself, its metadata, or nothing
// (`includeObject=Object|Metadata|None`). Nodes get kube's node columns (the wide ones included, as
// the server always sends them); any other resource kube's default two (Name, Created At).
import type { ResourceDef, StoredObject } from './resources.js';

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

const column = (name: string, description: string, priority = 0, format = ''): Column => ({
  name,
  type: 'string',
  format,
  description,
  priority,
});

/** About the size of kube's own descriptions (they come from the API's field docs). */
const NAME_DOC =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const AGE_DOC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

const NODE_COLUMNS: Column[] = [
  column('Name', NAME_DOC, 0, 'name'),
  column('Status', 'The status of the node'),
  column('Roles', 'The roles of the node'),
  column('Age', AGE_DOC),
  column('Version', 'Kubelet Version reported by the node.'),
  column(
    'Internal-IP',
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).",
    1,
  ),
  column(
    'External-IP',
    'List of addresses reachable to the node. Queried from cloud provider, if available.',
    1,
  ),
  column(
    'OS-Image',
    'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
    1,
  ),
  column(
    'Kernel-Version',
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    1,
  ),
  column(
    'Container-Runtime',
    'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
    1,
  ),
];

const DEFAULT_COLUMNS: Column[] = [
  column('Name', NAME_DOC, 0, 'name'),
  column('Created At', AGE_DOC, 0, 'date'),
];

/** What `includeObject` asks each row to carry. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Does this Accept header ask for a Table? */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((t) => /;\s*as=Table\b/.test(t) && /g=meta\.k8s\.io/.test(t));
}

/** `big` and, when not 0, `small` of the next unit: 5h3m, 3d. */
const two = (big: string, small: number, unit: string): string =>
  small === 0 ? big : `${big}${small}${unit}`;

/** kube's short age: 45s, 12m, 5h3m, 3d4h, 400d. */
function age(created: string | undefined, now: Date): string {
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(created ?? '')) / 1000));
  if (!Number.isFinite(s)) return '<unknown>';
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  if (s < 120) return `${s}s`;
  if (m < 10) return two(`${m}m`, s % 60, 's');
  if (m < 180) return `${m}m`;
  if (h < 48) return two(`${h}h`, m % 60, 'm');
  return d < 8 ? two(`${d}d`, h % 24, 'h') : `${d}d`;
}

interface NodeShape {
  metadata: { name?: string; labels?: Record<string, string>; creationTimestamp?: string };
  spec?: { unschedulable?: boolean };
  status?: {
    conditions?: { type: string; status: string }[];
    addresses?: { type: string; address: string }[];
    nodeInfo?: Record<string, string>;
  };
}

/** kube's node status: Ready, NotReady or Unknown (no Ready condition), and SchedulingDisabled. */
function nodeStatus(node: NodeShape): string {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const status = [ready === undefined ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady'];
  if (node.spec?.unschedulable === true) status.push('SchedulingDisabled');
  return status.join(',');
}

/** kube's node roles: node-role.kubernetes.io/<role> labels and kubernetes.io/role, or <none>. */
function nodeRoles(labels: Record<string, string> | undefined): string {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (key.startsWith('node-role.kubernetes.io/')) roles.add(key.slice('node-role.kubernetes.io/'.length));
    else if (key === 'kubernetes.io/role' && value !== '') roles.add(value);
  }
  return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
}

function address(node: NodeShape, type: string): string {
  return node.status?.addresses?.find((a) => a.type === type)?.address ?? '<none>';
}

function nodeCells(obj: StoredObject, now: Date): string[] {
  const node = obj as unknown as NodeShape;
  const info = node.status?.nodeInfo ?? {};
  const known = (v: string | undefined): string => (v === undefined || v === '' ? '<unknown>' : v);
  return [
    node.metadata.name ?? '',
    nodeStatus(node),
    nodeRoles(node.metadata.labels),
    age(node.metadata.creationTimestamp, now),
    info.kubeletVersion ?? '',
    address(node, 'InternalIP'),
    address(node, 'ExternalIP'),
    known(info.osImage),
    known(info.kernelVersion),
    known(info.containerRuntimeVersion),
  ];
}

/** What a row carries of its object. */
function rowObject(obj: StoredObject, include: IncludeObject): unknown {
  if (include === 'None') return null;
  if (include === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/** The Table kube-apiserver prints for a list of `def` objects. */
export function tableOf(
  def: ResourceDef,
  items: readonly StoredObject[],
  metadata: Record<string, unknown>,
  options: { include: IncludeObject; now: Date },
): Record<string, unknown> {
  const nodes = def.name === 'nodes';
  const cells = (obj: StoredObject): string[] =>
    nodes
      ? nodeCells(obj, options.now)
      : [obj.metadata.name, (obj.metadata as { creationTimestamp?: string }).creationTimestamp ?? ''];
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: nodes ? NODE_COLUMNS : DEFAULT_COLUMNS,
    rows: items.map((obj) => ({ cells: cells(obj), object: rowObject(obj, options.include) })),
  };
}
