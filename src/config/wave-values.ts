// Parsers of the wave's flag values (pure): --wave-growth, --group-order, --health-check, --node-check,
// --notify-events. Each throws an Error saying what is wrong; parse.ts names the flag.
import { NOTIFY_EVENTS, type NotifyEvent } from '../notify/notifier.js';
import type { NodeCheck, NodeCheckWhen, GroupOrder, HealthCheck, WaveGrowth } from './config.js';
import { checkObjectName } from './values.js';

/** --wave-growth: none, linear:K (each step K nodes larger) or x2 (each step twice as large). */
export function waveGrowth(value: string): WaveGrowth {
  const text = value.trim();
  if (text === 'none' || text === '') return { kind: 'none' };
  if (text === 'x2') return { kind: 'double' };
  const m = /^linear:(\d+)$/.exec(text);
  const step = m === null ? NaN : Number(m[1]);
  if (!Number.isSafeInteger(step) || step < 1)
    throw new Error('expected none, linear:K (K at least 1) or x2');
  return { kind: 'linear', step };
}

/** A label value: alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric. */
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** --group-order: parallel, sequential, or sequential:a,b,c (these groups first, in this order). */
export function groupOrder(value: string): GroupOrder {
  const text = value.trim();
  if (text === 'parallel') return { kind: 'parallel' };
  if (text === 'sequential') return { kind: 'sequential', order: [] };
  const m = /^sequential:(.+)$/.exec(text);
  if (m === null) throw new Error('expected parallel, sequential or sequential:GROUP,GROUP,…');
  const order = (m[1] ?? '').split(',').map((g) => g.trim());
  for (const g of order)
    if (!LABEL_VALUE.test(g) || g === '' || g.length > 63)
      throw new Error(`group ${JSON.stringify(g)} is not a label value`);
  if (new Set(order).size !== order.length) throw new Error('a group is named twice');
  return { kind: 'sequential', order };
}

/** A Kubernetes name segment of GROUP/VERSION/RESOURCE. */
const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * --health-check 'GROUP/VERSION/RESOURCE [NAMESPACE/]NAME: EXPR': `core` (or an empty group) for the
 * core API; the expression is what follows the first ": " after the name, and must not be empty.
 */
export function healthCheck(value: string): HealthCheck {
  const text = value.trim();
  const m = /^(\S*)\/(\S+)\/(\S+)\s+(\S+?):\s(.*)$/s.exec(text);
  if (m === null)
    throw new Error(
      "expected 'GROUP/VERSION/RESOURCE [NAMESPACE/]NAME: EXPR' (e.g. apps/v1/deployments web/api: self.status.readyReplicas == self.spec.replicas)",
    );
  const [, rawGroup = '', version = '', resource = '', object = '', expression = ''] = m;
  const group = rawGroup === 'core' ? '' : rawGroup;
  checkSegments(group, version, resource);
  if (expression.trim() === '') throw new Error('the expression after ": " is empty');
  return { group, version, resource, ...objectRef(object), expression: expression.trim(), text };
}

/** --node-check '[after-drain|at-slot|always] GROUP/VERSION/RESOURCE [NAMESPACE]: EXPR' (`core` or nothing: the core group). */
export function nodeCheck(value: string): NodeCheck {
  const text = value.trim();
  const m =
    /^(?:(after-drain|at-slot|always)\s+)?(\S*)\/([^\s/]+)\/([^\s/:]+)(?:\s+([^\s:]+))?:\s(.*)$/s.exec(text);
  if (m === null)
    throw new Error(
      "expected '[after-drain|at-slot|always] GROUP/VERSION/RESOURCE [NAMESPACE]: EXPR' (e.g. longhorn.io/v1beta2/volumes longhorn-system: !self.items.exists(v, v.status.currentNodeID == node.metadata.name))",
    );
  const [, when, rawGroup, version, resource, namespace, expression = ''] = m;
  if (expression.trim() === '') throw new Error('the expression after ": " is empty');
  return {
    ...collectionRef(rawGroup ?? '', version ?? '', resource ?? '', namespace),
    expression: expression.trim(),
    when: (when ?? 'after-drain') as NodeCheckWhen,
    text,
  };
}

/** GROUP/VERSION/RESOURCE [NAMESPACE] as read: each part checked, `core` the core group (''). */
function collectionRef(
  rawGroup: string,
  version: string,
  resource: string,
  namespace: string | undefined,
): Pick<NodeCheck, 'group' | 'version' | 'resource' | 'namespace'> {
  const group = rawGroup === 'core' ? '' : rawGroup;
  checkSegments(group, version, resource);
  if (namespace === undefined) return { group, version, resource };
  checkObjectName(namespace, 'label');
  return { group, version, resource, namespace };
}

/** GROUP/VERSION/RESOURCE, each a Kubernetes name segment (the core group empty). */
function checkSegments(group: string, version: string, resource: string): void {
  for (const [what, part] of [
    ['version', version],
    ['resource', resource],
    ...(group === '' ? [] : [['group', group]]),
  ] as const)
    if (!SEGMENT.test(part)) throw new Error(`${what} ${JSON.stringify(part)} is not a valid name`);
}

/** [NAMESPACE/]NAME, each checked. */
function objectRef(object: string): { namespace?: string; name: string } {
  const parts = object.split('/');
  if (parts.length > 2) throw new Error(`object ${JSON.stringify(object)} is not [NAMESPACE/]NAME`);
  const [first = '', second] = parts;
  const name = second ?? first;
  checkObjectName(name, 'subdomain');
  if (second === undefined) return { name };
  checkObjectName(first, 'label');
  return { namespace: first, name };
}

/** --notify-events: `all`, or kinds of NOTIFY_EVENTS (comma-separated or repeated). */
export function notifyEvents(values: readonly string[]): NotifyEvent[] {
  const items = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (items.length === 0 || items.includes('all')) return [...NOTIFY_EVENTS];
  return [
    ...new Set(
      items.map((item) => {
        const kind = NOTIFY_EVENTS.find((k) => k === item);
        if (kind === undefined) throw new Error(`${item} is not one of all, ${NOTIFY_EVENTS.join(', ')}`);
        return kind;
      }),
    ),
  ];
}
