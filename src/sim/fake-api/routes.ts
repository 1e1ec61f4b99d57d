// URL paths of the Kubernetes REST API, parsed into the resource, namespace, name and subresource.
import { RESOURCES, type ResourceDef, type ResourceName } from './resources.js';

/** A request for a resource collection or one object. */
export interface Route {
  def: ResourceDef;
  /** From `/namespaces/{ns}/…`; undefined for cluster-scoped resources and all-namespace lists. */
  namespace: string | undefined;
  name: string | undefined;
  /** `status`, `eviction`, … */
  subresource: string | undefined;
}

const SUBRESOURCES: Partial<Record<ResourceName, readonly string[]>> = {
  nodes: ['status'],
  pods: ['status', 'eviction'],
  daemonsets: ['status'],
  deployments: ['status'],
  replicasets: ['status'],
  poddisruptionbudgets: ['status'],
  namespaces: ['status', 'finalize'],
  volumes: ['status'],
};

/** Every resource by "apiVersion plural" (two groups may share a plural): one lookup per request. */
const BY_PATH = new Map(Object.values(RESOURCES).map((d) => [`${d.apiVersion} ${d.plural}`, d]));

/** The resource served at `plural` in `apiVersion`. */
function defFor(plural: string | undefined, apiVersion: string): ResourceDef | undefined {
  return BY_PATH.get(`${apiVersion} ${plural ?? ''}`);
}

/** Splits `/api/v1/…` and `/apis/{group}/{version}/…` into the API version and the rest. */
function splitPrefix(parts: string[]): { apiVersion: string; rest: string[] } | undefined {
  if (parts[0] === 'api' && parts[1] === 'v1') return { apiVersion: 'v1', rest: parts.slice(2) };
  if (parts[0] === 'apis' && parts[1] !== undefined && parts[2] !== undefined) {
    return { apiVersion: `${parts[1]}/${parts[2]}`, rest: parts.slice(3) };
  }
  return undefined;
}

interface Segments {
  apiVersion: string;
  namespace: string | undefined;
  resource: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  extra: number;
}

function segments(pathname: string): Segments | undefined {
  const parts = pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const prefix = splitPrefix(parts);
  if (!prefix) return undefined;
  const { rest } = prefix;
  const scoped =
    rest[0] === 'namespaces' && rest.length >= 3 && defFor(rest[2], prefix.apiVersion) !== undefined;
  const [resource, name, subresource, ...extra] = scoped ? rest.slice(2) : rest;
  const namespace = scoped ? rest[1] : undefined;
  return { apiVersion: prefix.apiVersion, namespace, resource, name, subresource, extra: extra.length };
}

/** A namespaced resource is reachable without a namespace only as a collection (all namespaces). */
function scopeFits(def: ResourceDef, s: Segments): boolean {
  if (s.namespace !== undefined) return def.namespaced;
  return !def.namespaced || s.name === undefined;
}

/** The route for a path, or undefined when nothing is served there (404). */
export function parseRoute(pathname: string): Route | undefined {
  const s = segments(pathname);
  if (!s || s.extra > 0) return undefined;
  const def = defFor(s.resource, s.apiVersion);
  if (def === undefined || !scopeFits(def, s)) return undefined;
  if (s.subresource !== undefined && !(SUBRESOURCES[def.name] ?? []).includes(s.subresource))
    return undefined;
  return { def, namespace: s.namespace, name: s.name, subresource: s.subresource };
}
