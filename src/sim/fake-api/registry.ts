// The API semantics over the store: create, replace, patch, delete, evict, with kube-apiserver's
// validation, preconditions and errors. Both the HTTP layer and in-process callers go through here.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock/clock.js';
import { isObject, jsonEqual, toJson, type JsonObject } from './json.js';
import { applyPatch, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH } from './patch.js';
import { managedFieldsAfter, type Writer } from './managed-fields.js';
import { BudgetTallies, evictionRefusal, pdbStatus, selects, type PdbNumbers } from './pdb.js';
import { RESOURCES, type ResourceDef, type StoredMeta, type StoredObject } from './resources.js';
import { passes, requiredValue, type ObjectFilter } from './selectors.js';
import {
  alreadyExists,
  apiError,
  badRequest,
  conflict,
  invalid,
  notFound,
  preconditionFailed,
} from './status.js';
import type { Change, Store } from './store.js';
import { validate } from './validation.js';
import { addCreationTaint, withControllerTaints } from './node-taints.js';
import type { Admission, AdmissionAttributes, UserInfo } from './admission.js';

/** The name and namespace an object names ('' when it names none). */
function targetOf(object: JsonObject): { namespace: string; name: string } {
  const meta = isObject(object.metadata) ? object.metadata : {};
  return { namespace: stringOr(meta.namespace) ?? '', name: stringOr(meta.name) ?? '' };
}

/** How DELETE and eviction treat pods; see FakeApiServerOptions. */
export type PodDeletion = 'immediate' | 'graceful';

/** The field manager of in-process writes (tests, the simulated kubelet and controllers). */
const IN_PROCESS_MANAGER = 'fake-api-server';

/** Who writes: the field manager, and for HTTP requests the user admission reviews. */
export interface Caller {
  manager: string;
  /** Absent for in-process writes, which admission does not review. */
  user?: UserInfo;
}

const IN_PROCESS: Caller = { manager: IN_PROCESS_MANAGER };

/** Delete options from a DELETE body, its query, or an Eviction's deleteOptions. */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** The object a PUT or PATCH addresses. */
export interface ObjectTarget {
  namespace: string | undefined;
  name: string;
  /** 'status' writes only the status. */
  subresource?: string | undefined;
}

/** What a DELETE answers: the object (pods, graceful deletions) or a Status. */
export interface DeleteResult {
  body: unknown;
  removed: boolean;
}

const MODIFIED_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';
/** What kured-ts and kubectl send; server-side apply is not implemented (415). */
const PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH];

/** RFC 3339 with seconds, as kube renders metav1.Time. */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Behaviour switches of the registry; see FakeApiServerOptions. */
export interface RegistryOptions {
  podDeletion: PodDeletion;
  nodeController: boolean;
  /** Reviews every HTTP write before it is stored (ValidatingAdmissionPolicies). Default none. */
  admission?: Admission;
}

/** deleteOptions.dryRun: ["All"]. */
function isDryRun(options: Record<string, unknown>): boolean {
  return Array.isArray(options.dryRun) && options.dryRun.includes('All');
}

export class Registry {
  private readonly tallies = new BudgetTallies();
  private readonly podDeletion: PodDeletion;
  private readonly admission: Admission | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    options: RegistryOptions,
  ) {
    this.podDeletion = options.podDeletion;
    this.admission = options.admission;
    store.afterCommit((change) => {
      this.refreshBudgets(change);
    });
    if (options.nodeController) {
      store.afterCommit((change) => {
        this.refreshNodeTaints(change);
      });
    }
  }
  /** The server's clock (what it writes into timestamps and its Date header). */
  now(): Date {
    return this.clock.now();
  }

  /** The node lifecycle controller's taints, applied right after the node write that calls for them. */
  private refreshNodeTaints(change: Change): void {
    if (change.resource !== 'nodes' || change.type === 'DELETED') return;
    const current = this.store.get('nodes', undefined, change.object.metadata.name);
    if (current !== change.object) return; // a later write of this node has its own turn
    const next = withControllerTaints(current, kubeTime(this.clock.now()));
    if (next) this.store.commit('nodes', 'MODIFIED', next);
  }

  mustGet(def: ResourceDef, namespace: string | undefined, name: string): StoredObject {
    const obj = this.store.get(def.name, def.namespaced ? namespace : undefined, name);
    if (!obj) throw notFound(def, name);
    return obj;
  }

  list(def: ResourceDef, namespace: string | undefined, filter: ObjectFilter): StoredObject[] {
    const ns = def.namespaced ? namespace : undefined;
    const node = def.name === 'pods' ? requiredValue(filter, 'spec.nodeName') : undefined;
    const candidates = node === undefined ? this.store.list(def.name, ns) : this.store.podsOn(node, ns);
    return candidates.filter((o) => passes(filter, o));
  }

  /** list as it was at resourceVersion `rv`; undefined once the history no longer reaches back to it. */
  listAt(
    def: ResourceDef,
    namespace: string | undefined,
    filter: ObjectFilter,
    rv: number,
  ): StoredObject[] | undefined {
    return this.store
      .listAt(def.name, def.namespaced ? namespace : undefined, rv)
      ?.filter((o) => passes(filter, o));
  }

  /** POST: names the object (generateName), fills server-owned metadata, 409 when it exists. */
  create(def: ResourceDef, namespace: string | undefined, body: unknown, caller = IN_PROCESS): StoredObject {
    if (!isObject(body)) throw badRequest('the body of the request must be a JSON object');
    const meta = isObject(body.metadata) ? body.metadata : {};
    const ns = this.namespaceFor(def, namespace, meta);
    const name = this.nameFor(def, meta);
    if (this.store.get(def.name, ns, name)) throw alreadyExists(def, name);
    const metadata: StoredMeta = {
      ...toJson(meta),
      name,
      uid: randomUUID(),
      resourceVersion: '',
      creationTimestamp: kubeTime(this.clock.now()),
    };
    delete metadata.generateName;
    delete metadata.deletionTimestamp;
    delete metadata.deletionGracePeriodSeconds;
    if (ns !== undefined) metadata.namespace = ns;
    if (def.name !== 'events') metadata.generation = 1;
    delete metadata.managedFields;
    const obj: StoredObject = { ...toJson(body), apiVersion: def.apiVersion, kind: def.kind, metadata };
    if (def.name === 'pods') defaultPodStatus(obj);
    if (def.name === 'nodes' && caller !== IN_PROCESS) addCreationTaint(obj);
    validate(def, obj);
    this.review(caller, { operation: 'CREATE', def, subResource: '', object: obj, oldObject: null });
    obj.metadata.managedFields = managedFieldsAfter(undefined, obj, this.writer(def, caller.manager));
    return this.store.commit(def.name, 'ADDED', obj);
  }

  private namespaceFor(
    def: ResourceDef,
    namespace: string | undefined,
    meta: JsonObject,
  ): string | undefined {
    if (!def.namespaced) return undefined;
    const own = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : undefined;
    if (namespace !== undefined && own !== undefined && own !== namespace) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    const ns = namespace ?? own;
    if (ns === undefined) throw badRequest(`a namespace is required to create ${def.plural}`);
    return ns;
  }

  private nameFor(def: ResourceDef, meta: JsonObject): string {
    if (typeof meta.name === 'string' && meta.name !== '') return meta.name;
    if (typeof meta.generateName === 'string' && meta.generateName !== '') {
      return meta.generateName + randomUUID().replace(/-/g, '').slice(0, 5);
    }
    throw invalid(def, '', [
      {
        reason: 'FieldValueRequired',
        field: 'metadata.name',
        message: 'Required value: name or generateName is required',
      },
    ]);
  }

  /** PUT: a non-empty metadata.resourceVersion is a precondition; without one the write is unconditional. */
  replace(def: ResourceDef, target: ObjectTarget, body: unknown, caller = IN_PROCESS): StoredObject {
    const existing = this.mustGet(def, target.namespace, target.name);
    if (!isObject(body)) throw badRequest('the body of the request must be a JSON object');
    return this.write(def, existing, toJson(body), { caller, subresource: target.subresource });
  }

  /** PATCH by content type; the patched object's resourceVersion is a precondition as in kube. */
  patch(
    def: ResourceDef,
    target: ObjectTarget,
    request: { contentType: string; body: unknown; caller?: Caller },
  ): StoredObject {
    const { contentType, body } = request;
    if (!PATCH_TYPES.includes(contentType)) {
      throw apiError(
        415,
        `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(', ')}`,
      );
    }
    const existing = this.mustGet(def, target.namespace, target.name);
    const patched = applyPatch(contentType, toJson(existing), body);
    return this.write(def, existing, patched, {
      caller: request.caller ?? IN_PROCESS,
      subresource: target.subresource,
    });
  }

  /** Admission of an HTTP write (in-process writes have no user and are not reviewed). */
  private review(
    caller: Caller,
    request: {
      operation: AdmissionAttributes['operation'];
      def: ResourceDef;
      subResource: string;
      /** null for a DELETE (as in kube: the object being deleted is oldObject). */
      object: JsonObject | null;
      oldObject: JsonObject | null;
      target?: { namespace: string; name: string };
    },
  ): void {
    if (this.admission === undefined || caller.user === undefined) return;
    const { def, object } = request;
    const target = request.target ?? targetOf(object ?? request.oldObject ?? {});
    this.admission.review({
      operation: request.operation,
      resource: { group: def.group, version: def.apiVersion.split('/').pop() ?? '', resource: def.plural },
      subResource: request.subResource,
      ...target,
      userInfo: caller.user,
      object,
      oldObject: request.oldObject,
    });
  }

  /** Who writes now, for managedFields. */
  private writer(def: ResourceDef, manager: string, subresource?: string): Writer {
    return {
      manager,
      apiVersion: def.apiVersion,
      time: kubeTime(this.clock.now()),
      ...(subresource === undefined ? {} : { subresource }),
    };
  }

  private write(
    def: ResourceDef,
    existing: StoredObject,
    candidate: JsonObject,
    by: { caller: Caller; subresource: string | undefined },
  ): StoredObject {
    const subresource = by.subresource;
    const meta = isObject(candidate.metadata) ? candidate.metadata : {};
    const name = existing.metadata.name;
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(
        `the name of the object (${JSON.stringify(meta.name)}) does not match the name on the URL (${name})`,
      );
    }
    const rv = meta.resourceVersion;
    if (rv !== undefined && rv !== null && rv !== '' && rv !== existing.metadata.resourceVersion) {
      throw conflict(def, name, MODIFIED_MESSAGE);
    }
    const next = merged(def, existing, candidate, subresource);
    // As in kube: validation, then admission, even of an update that changes nothing.
    validate(def, next);
    this.review(by.caller, {
      operation: 'UPDATE',
      def,
      subResource: subresource ?? '',
      object: next,
      oldObject: existing,
    });
    if (sameContent(next, existing)) return existing;
    next.metadata.managedFields = managedFieldsAfter(
      existing,
      next,
      this.writer(def, by.caller.manager, subresource),
    );
    return this.store.commit(def.name, 'MODIFIED', next);
  }

  /** In-process unconditional write: replaces everything, status included. */
  put(def: ResourceDef, obj: JsonObject, manager = IN_PROCESS_MANAGER): StoredObject {
    const meta = isObject(obj.metadata) ? obj.metadata : {};
    const existing = this.mustGet(def, stringOr(meta.namespace), stringOr(meta.name) ?? '');
    const candidate = toJson(obj);
    const candidateMeta = isObject(candidate.metadata) ? candidate.metadata : {};
    candidate.metadata = { ...candidateMeta, resourceVersion: undefined };
    // server-owned metadata (uid, deletionTimestamp…) stays, so a stale copy cannot undo a deletion
    const next = merged(def, existing, candidate, 'all');
    if (sameContent(next, existing)) return existing;
    next.metadata.managedFields = managedFieldsAfter(existing, next, this.writer(def, manager));
    return this.store.commit(def.name, 'MODIFIED', next);
  }

  /**
   * DELETE: graceful for scheduled, running pods when the server is in graceful mode. An HTTP caller's
   * DELETE is reviewed by admission (object null, oldObject the stored object), as in kube.
   */
  remove(
    def: ResourceDef,
    { namespace, name }: { namespace: string | undefined; name: string },
    options: DeleteOptions,
    caller: Caller = IN_PROCESS,
  ): DeleteResult {
    const existing = this.mustGet(def, namespace, name);
    checkPreconditions(def, existing, options);
    this.review(caller, {
      operation: 'DELETE',
      def,
      subResource: '',
      object: null,
      oldObject: existing,
      target: { namespace: namespace ?? '', name },
    });
    const grace = this.gracePeriod(def, existing, options);
    if (grace > 0) return { body: this.markDeleting(def, existing, grace), removed: false };
    const gone = this.store.commit(def.name, 'DELETED', existing);
    if (def.name === 'pods') return { body: gone, removed: true };
    const details = {
      name,
      kind: def.plural,
      uid: existing.metadata.uid,
      ...(def.group ? { group: def.group } : {}),
    };
    return {
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details },
      removed: true,
    };
  }

  /** In-process removal at once, whatever the deletion mode (the simulated kubelet's final delete). */
  removeNow(def: ResourceDef, namespace: string | undefined, name: string): void {
    this.store.commit(def.name, 'DELETED', this.mustGet(def, namespace, name));
  }

  private gracePeriod(def: ResourceDef, pod: StoredObject, options: DeleteOptions): number {
    if (def.name !== 'pods' || this.podDeletion === 'immediate') return 0;
    const phase = (pod.status as JsonObject | undefined)?.phase;
    const spec = pod.spec as JsonObject | undefined;
    if (phase === 'Succeeded' || phase === 'Failed' || !spec?.nodeName) return 0;
    const fromSpec =
      typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30;
    return Math.max(0, options.gracePeriodSeconds ?? fromSpec);
  }

  private markDeleting(def: ResourceDef, pod: StoredObject, grace: number): StoredObject {
    const current = pod.metadata.deletionGracePeriodSeconds;
    if (pod.metadata.deletionTimestamp !== undefined && current !== undefined && current <= grace) return pod;
    const at = new Date(this.clock.now().getTime() + grace * 1000);
    const metadata = { ...pod.metadata, deletionTimestamp: kubeTime(at), deletionGracePeriodSeconds: grace };
    return this.store.commit(def.name, 'MODIFIED', { ...pod, metadata });
  }

  /**
   * policy/v1 Eviction of a pod: refused with 429 while its PDB allows no disruption, then, as kube
   * judges them, 409 when its deleteOptions' preconditions (the pod's UID) do not hold. A dry run
   * (`dryRun=All` in the query, or in the Eviction's deleteOptions) is judged alike and removes nothing.
   */
  evict(
    target: { namespace: string; name: string; dryRun?: boolean },
    body: unknown,
    caller = IN_PROCESS,
  ): void {
    const { namespace, name } = target;
    const pods = RESOURCES.pods;
    const eviction = isObject(body) ? body : {};
    const meta = isObject(eviction.metadata) ? eviction.metadata : {};
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest('name in URL does not match name in Eviction object');
    }
    const pod = this.mustGet(pods, namespace, name);
    this.review(caller, {
      operation: 'CREATE',
      def: pods,
      subResource: 'eviction',
      object: eviction,
      oldObject: null,
      target: { namespace, name },
    });
    if (!canIgnoreBudget(pod)) this.checkBudget(namespace, pod);
    const options = isObject(eviction.deleteOptions) ? eviction.deleteOptions : {};
    checkPreconditions(pods, pod, deleteOptionsOf(options));
    if (target.dryRun === true || isDryRun(options)) return;
    this.remove(pods, { namespace, name }, deleteOptionsOf(options));
  }

  private checkBudget(namespace: string, pod: StoredObject): void {
    const budgets = this.store.list('poddisruptionbudgets', namespace).filter((b) => selects(b, pod));
    if (budgets.length > 1) {
      throw apiError(
        500,
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      );
    }
    const budget = budgets[0];
    if (!budget) return;
    const numbers = this.budgetNumbers(budget);
    const refusal = evictionRefusal(budget, pod, numbers);
    if (refusal === undefined) return;
    throw apiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", {
      causes: [{ reason: 'DisruptionBudget', message: refusal }],
    });
  }

  /** Keeps every PDB's status current after a pod or PDB changes in its namespace. */
  private refreshBudgets(change: Change): void {
    for (const budget of this.affectedBudgets(change)) {
      const status = pdbStatus(budget, this.budgetNumbers(budget), kubeTime(this.clock.now()));
      if (!jsonEqual(status, budget.status)) {
        this.store.commit('poddisruptionbudgets', 'MODIFIED', { ...budget, status });
      }
    }
  }

  private budgetNumbers(budget: StoredObject): PdbNumbers {
    const namespace = budget.metadata.namespace;
    return this.tallies.numbers(budget, () => this.store.values('pods', namespace), this.store.version());
  }

  /** The PDBs whose numbers a change may move: those selecting the pod before or after it. */
  private affectedBudgets(change: Change): StoredObject[] {
    const { name, namespace } = change.object.metadata;
    if (change.resource === 'poddisruptionbudgets') {
      if (change.type === 'DELETED') this.tallies.forget(change.object);
      const current = this.store.get('poddisruptionbudgets', namespace, name);
      return current ? [current] : [];
    }
    if (change.resource !== 'pods') return [];
    return this.tallies.podChanged(this.store.values('poddisruptionbudgets', namespace), {
      previous: change.previous,
      next: change.type === 'DELETED' ? undefined : change.object,
      version: change.rv,
    });
  }
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** kube lets terminal, pending and already-terminating pods go without asking their budget. */
function canIgnoreBudget(pod: StoredObject): boolean {
  const phase = (pod.status as JsonObject | undefined)?.phase;
  return (
    phase === 'Succeeded' ||
    phase === 'Failed' ||
    phase === 'Pending' ||
    pod.metadata.deletionTimestamp !== undefined
  );
}

function defaultPodStatus(pod: StoredObject): void {
  const status = isObject(pod.status) ? pod.status : {};
  if (status.phase === undefined) status.phase = 'Pending';
  pod.status = status;
}

/** Reads delete options from a JSON body (DeleteOptions) or an Eviction's deleteOptions. */
export function deleteOptionsOf(raw: unknown): DeleteOptions {
  if (!isObject(raw)) return {};
  const options: DeleteOptions = {};
  if (typeof raw.gracePeriodSeconds === 'number') options.gracePeriodSeconds = raw.gracePeriodSeconds;
  if (isObject(raw.preconditions)) {
    options.preconditions = {
      uid: stringOr(raw.preconditions.uid),
      resourceVersion: stringOr(raw.preconditions.resourceVersion),
    };
  }
  return options;
}

/** kube-apiserver's answer (rest.BeforeDelete) when a DELETE's or an eviction's preconditions fail. */
function checkPreconditions(def: ResourceDef, obj: StoredObject, options: DeleteOptions): void {
  const pre = options.preconditions;
  const { uid, resourceVersion, name } = obj.metadata;
  if (pre?.uid !== undefined && pre.uid !== uid) {
    throw preconditionFailed(
      def,
      name,
      `the UID in the precondition (${pre.uid}) does not match the UID in record (${uid}). The object might have been deleted and then recreated`,
    );
  }
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== resourceVersion) {
    throw preconditionFailed(
      def,
      name,
      `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${resourceVersion}). The object might have been modified`,
    );
  }
}

const IMMUTABLE_META = [
  'name',
  'namespace',
  'uid',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

/** The candidate's metadata with the server-owned fields of the stored object. */
function mergedMeta(existing: StoredObject, candidate: JsonObject): StoredMeta {
  const candidateMeta = isObject(candidate.metadata) ? candidate.metadata : {};
  const metadata: JsonObject = {};
  for (const [key, value] of Object.entries(candidateMeta)) {
    if (!IMMUTABLE_META.includes(key) && value !== undefined && value !== null) metadata[key] = value;
  }
  const merged: JsonObject = { ...metadata, ...pick(existing.metadata, IMMUTABLE_META) };
  return merged as StoredMeta;
}

/**
 * The object a write produces: server-owned metadata kept; for resources with a status subresource
 * a main-resource write keeps the stored status and a /status write keeps everything but the status
 * (`scope` 'all' = in-process write of everything); generation bumps when spec changes.
 */
function merged(
  def: ResourceDef,
  existing: StoredObject,
  candidate: JsonObject,
  scope?: string,
): StoredObject {
  const metadata = mergedMeta(existing, candidate);
  let next: StoredObject = { ...candidate, apiVersion: def.apiVersion, kind: def.kind, metadata };
  if (def.hasStatus && scope === 'status') {
    next = { ...existing, metadata: { ...existing.metadata }, status: candidate.status };
  } else if (def.hasStatus && scope !== 'all') next = withStatus(next, existing.status);
  if (existing.metadata.generation !== undefined) {
    next.metadata.generation = existing.metadata.generation + (jsonEqual(next.spec, existing.spec) ? 0 : 1);
  }
  next.metadata.resourceVersion = existing.metadata.resourceVersion;
  return next;
}

function withStatus(obj: StoredObject, status: unknown): StoredObject {
  const next = { ...obj };
  if (status === undefined) delete next.status;
  else next.status = status;
  return next;
}

function pick(meta: StoredMeta, keys: readonly string[]): Partial<StoredMeta> {
  const out: Partial<StoredMeta> = {};
  for (const key of keys) if (meta[key] !== undefined) out[key] = meta[key];
  return out;
}

function sameContent(a: StoredObject, b: StoredObject): boolean {
  return jsonEqual(
    { ...a, metadata: { ...a.metadata, resourceVersion: '', managedFields: undefined } },
    { ...b, metadata: { ...b.metadata, resourceVersion: '', managedFields: undefined } },
  );
}
