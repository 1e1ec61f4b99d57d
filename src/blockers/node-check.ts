// The storage system's word about this node (--node-check, issue 54): one LIST of a resource (at most
// NODE_CHECK_ITEMS items and NODE_CHECK_BYTES of answer) and a CEL expression over it (`self`, with
// `self.items`) and this Node (`node`), under the CEL budget (src/cel/). Judged after the drain, in
// the wait before the reboot (src/agent/decision/node-check-wait.ts), and/or, as its leading word
// says (at-slot, always), before the node takes a slot (a blocker judged at the slot: the node about to go asks,
// the waiters do not). A list too large, an error, a 403 or a missing resource fails closed, with the
// reason.
import type { CelEvaluator } from '../cel/cel.js';
import type { NodeCheck } from '../config/config.js';
import { isNotFound, statusMessage } from '../kube/errors.js';
import type { Kube, V1Node } from '../kube/kube.js';
import { errorText } from '../text/error-text.js';
import type { Blocker, Verdict } from './blocker.js';

/** The most items one check reads: past it the check fails closed (a storage system names hundreds). */
const NODE_CHECK_ITEMS = 500;
/** The largest answer one check reads. */
const NODE_CHECK_BYTES = 4 << 20;

/** One node check's result. */
export interface NodeCheckResult {
  check: NodeCheck;
  ok: boolean;
  /** 'true', or why not (false, the error, the list too large). */
  reason: string;
}

/** The collection a check lists, as people name it. */
export function collectionOf(check: NodeCheck): string {
  const group = check.group === '' ? 'core' : check.group;
  const where = check.namespace === undefined ? 'all namespaces' : check.namespace;
  return `${group}/${check.version}/${check.resource} in ${where}`;
}

/** The checks, evaluated over one LIST each and this Node. */
export class NodeChecks {
  constructor(
    private readonly o: {
      kube: Pick<Kube, 'getNode' | 'listObjects'>;
      nodeId: string;
      checks: readonly NodeCheck[];
      cel: CelEvaluator;
    },
  ) {}

  /** The checks judged at the slot (at-slot, always). */
  get atSlot(): NodeCheck[] {
    return this.o.checks.filter((c) => c.when !== 'after-drain');
  }

  /** The checks judged after the drain (after-drain, always). */
  get afterDrain(): NodeCheck[] {
    return this.o.checks.filter((c) => c.when !== 'at-slot');
  }

  /**
   * Each of `checks`' results, in order, against this Node as read now (one read: free while the
   * agent follows its Node). A Node that cannot be read fails every check.
   */
  async evaluate(checks: readonly NodeCheck[], signal?: AbortSignal): Promise<NodeCheckResult[]> {
    if (checks.length === 0) return [];
    let node: V1Node;
    try {
      node = await this.o.kube.getNode(this.o.nodeId, signal);
    } catch (err) {
      signal?.throwIfAborted();
      const reason = `cannot read Node ${this.o.nodeId}: ${errorText(err)}`;
      return checks.map((check) => ({ check, ok: false, reason }));
    }
    const results: NodeCheckResult[] = [];
    for (const check of checks) results.push(await this.one(check, node, signal));
    return results;
  }

  private async one(check: NodeCheck, node: V1Node, signal?: AbortSignal): Promise<NodeCheckResult> {
    const fail = (reason: string): NodeCheckResult => ({ check, ok: false, reason });
    const list = this.o.kube.listObjects?.bind(this.o.kube);
    if (list === undefined) return fail('this client cannot list objects');
    let items: unknown[];
    try {
      const page = await list(check, { limit: NODE_CHECK_ITEMS, maxBytes: NODE_CHECK_BYTES }, signal);
      if (page.more) return fail(`${collectionOf(check)}: more than ${NODE_CHECK_ITEMS} items`);
      items = page.items;
    } catch (err) {
      signal?.throwIfAborted();
      return fail(
        isNotFound(err)
          ? `${collectionOf(check)}: the resource is not served (is its CRD installed?)`
          : `cannot list ${collectionOf(check)}: ${statusMessage(err)}`,
      );
    }
    const outcome = await this.o.cel.evaluate(check.expression, { self: { items }, node }, signal);
    return 'error' in outcome
      ? fail(outcome.error)
      : { check, ok: outcome.value, reason: String(outcome.value) };
  }
}

/** The first failing check as a reason ("node check longhorn.io/…: EXPR: false"). */
export function failedNodeCheck(results: readonly NodeCheckResult[]): string | undefined {
  const failed = results.find((r) => !r.ok);
  return failed === undefined ? undefined : `node check ${failed.check.text}: ${failed.reason}`;
}

/** The at-slot and always checks as a blocker judged at the slot: the node about to go asks, one LIST each. */
export class NodeCheckBlocker implements Blocker {
  readonly name = 'node-check';
  readonly atSlot = true;

  constructor(private readonly checks: NodeChecks) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const reason = failedNodeCheck(await this.results(signal));
    return reason === undefined ? { blocked: false } : { blocked: true, reason };
  }

  /** Each at-slot check's own result (`kured-ts check` shows them all). */
  results(signal?: AbortSignal): Promise<NodeCheckResult[]> {
    return this.checks.evaluate(this.checks.atSlot, signal);
  }
}
