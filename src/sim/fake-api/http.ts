// The HTTP face of the fake API server: reads a request, finds its route and verb, answers JSON.
// The same exchange serves requests off a socket (handleRequest) and requests handed over in memory
// (handleExchange with a memory response, memory-exchange.ts): only the wire differs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { managerOf } from './managed-fields.js';
import { listPage } from './pages.js';
import { deleteOptionsOf, type Caller, type DeleteOptions, type Registry } from './registry.js';
import { userFromHeaders } from './admission.js';
import type { StoredObject } from './resources.js';
import { parseRoute, type Route } from './routes.js';
import { parseFilter } from './selectors.js';
import { ApiError, apiError, badRequest, notFound, statusFor } from './status.js';
import type { Store } from './store.js';
import { WatchHub } from './watch.js';
import { NODE_NAME_EXTRA } from '../../admission/agent-policy.js';
import { tableOf, wantsTable, type IncludeObject } from './table.js';
import type { ResponseSink } from './response-sink.js';

/** One HTTP request as the server recorded it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  /** HTTP status of the answer (0 while not yet answered). */
  status: number;
  /** Date.now() when the request arrived. */
  at: number;
  /** Bytes of the answer's body (0 while not yet answered, and for watch streams). */
  bytes?: number;
  /**
   * The node claim of the caller's identity (an agent's token, impersonated: its Node's name), so
   * that a simulation can tell each agent's requests from the coordinator's; undefined without one.
   */
  node?: string;
}

/**
 * How an injected failure strikes: 'fail' answers the error instead of serving the request;
 * 'commit-then-fail' serves it (a write is stored and watchers see it) and answers the error anyway,
 * as when the connection breaks after etcd accepted the write; 'hang' accepts the request and never
 * answers (until the server closes); 'silent' answers 200 and then sends nothing more, neither body
 * nor end (a watch whose stream went quiet: no event, no bookmark), until the client closes;
 * 'closed' answers 200 and ends the answer at once with no body (a watch a proxy closes as soon as it
 * is opened).
 */
export type FailureMode = 'fail' | 'commit-then-fail' | 'hang' | 'silent' | 'closed';

/** A failure to inject into the next matching requests. */
export interface InjectedFailure {
  method?: string;
  pathIncludes?: string;
  status: number;
  remaining: number;
  /** Status causes to answer with (e.g. kube's NamespaceTerminating for a 403 on an eviction). */
  causes?: { reason: string; message: string }[];
  /** The Status message. Default `injected failure for METHOD PATH`. */
  message?: string;
  /** Default 'fail'. */
  mode?: FailureMode;
}

/** A fraction of all matching requests answered with an error, drawn at random (a flaky API server). */
export interface Chaos {
  /** In [0, 1]: the share of matching requests that fail. */
  fraction: number;
  /** HTTP statuses to answer with, one drawn at random per failure (e.g. [429, 500]). */
  statuses: number[];
  /** Only requests with this method (case-insensitive); any when absent. */
  method?: string;
  /**
   * Watches fail too (answered with the status at once, as a proxy or an overloaded API server
   * answers them); default false: watches are spared.
   */
  watches?: boolean;
  /** Only requests whose path-with-query contains this; any when absent. */
  pathIncludes?: string;
  /**
   * In [0, 1]: the share of failures that strike after the request was served ('commit-then-fail':
   * a write is stored, its answer lost). Default 0.
   */
  committed?: number;
  /** The Status message. Default `injected failure for METHOD PATH`. */
  message?: string;
  /** [0, 1) source. */
  random: () => number;
  /** Strikes only before this moment of the server's clock (epoch ms); always when absent. */
  untilMs?: number;
}

/** The header that carries an impersonated agent's node claim (lower-case, as node:http gives it). */
const NODE_CLAIM_HEADER = `impersonate-extra-${encodeURIComponent(NODE_NAME_EXTRA)}`.toLowerCase();

/** Default watch timeout when the client gives none (kube picks 30–60 min). */
const DEFAULT_WATCH_SECONDS = 1800;

/** Everything a request handler needs. */
export interface HttpContext {
  store: Store;
  registry: Registry;
  hub: WatchHub;
  requests: RecordedRequest[];
  /** Keep at least this many of the latest requests (and at most twice as many); 0 = all. */
  maxRecordedRequests: number;
  failures: InjectedFailure[];
  /** A flaky server: undefined = off. */
  chaos?: Chaos;
  /**
   * Bytes of the answers sent (bodies, not headers; watch streams counted by the watch hub's caller),
   * and the requests that arrived by the node claim of their caller (never trimmed).
   */
  served: { bytes: number; byNode: Map<string, number> };
}

interface Parsed {
  method: string;
  url: URL;
  route: Route;
  contentType: string;
  body: unknown;
  /** The field manager of a write (?fieldManager=, else the User-Agent) and the user. */
  caller: Caller;
  /** The Accept header (a Table asked for). */
  accept: string | undefined;
}

interface Reply {
  code: number;
  body: unknown;
}

/** A request as it arrives: method, path and query, headers (names in lower case, as node:http gives them). */
export interface RequestHead {
  method: string;
  /** Path and query, e.g. `/api/v1/nodes?watch=true`. */
  url: string;
  headers: IncomingMessage['headers'];
}

/** Handles one request off a socket to completion; never rejects. */
export async function handleRequest(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const serve = arrived(ctx, { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers }, res);
  let text: string;
  try {
    text = await readBody(req);
  } catch {
    return; // the client went away mid-request: nothing to answer
  }
  serve(text);
}

/** Serves one request handed over in memory with its body, answering on `res`; never throws. */
export function handleExchange(ctx: HttpContext, req: RequestHead, text: string, res: ResponseSink): void {
  arrived(ctx, req, res)(text);
}

/** Records a request on its arrival; returns the function that serves it once its body is read. */
function arrived(ctx: HttpContext, req: RequestHead, res: ResponseSink): (text: string) => void {
  const url = new URL(req.url, 'http://fake');
  const method = req.method.toUpperCase();
  const header = req.headers['content-type'];
  const record: RecordedRequest = {
    method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    contentType: header,
    status: 0,
    at: Date.now(),
  };
  const node = nodeClaim(req.headers);
  if (node !== undefined) {
    record.node = node;
    ctx.served.byNode.set(node, (ctx.served.byNode.get(node) ?? 0) + 1);
  }
  ctx.requests.push(record);
  const max = ctx.maxRecordedRequests;
  // trim in batches so that a long simulation neither grows without bound nor pays O(n) per request
  if (max > 0 && ctx.requests.length >= 2 * max) ctx.requests.splice(0, ctx.requests.length - max);
  const onFinish = (): void => {
    record.status = res.statusCode;
  };
  res.on('finish', onFinish);
  const gzip = acceptsGzip(req.headers['accept-encoding']);
  return (text) => {
    try {
      const raw = { method, url, text, header, headers: req.headers };
      const reply = answer(ctx, raw, res);
      if (reply) record.bytes = send(res, reply, ctx.registry.now(), gzip);
      ctx.served.bytes += record.bytes ?? 0;
      record.status = res.statusCode;
    } catch (err) {
      const status = err instanceof ApiError ? err.status : statusFor(500, `internal error: ${String(err)}`);
      ctx.served.bytes += send(res, { code: status.code, body: status }, ctx.registry.now(), gzip);
      record.status = status.code;
    }
  };
}

/** The reply to a request, after any failure it meets; undefined when there is none (yet) to send. */
function answer(ctx: HttpContext, raw: RawRequest, res: ResponseSink): Reply | undefined {
  const failure = takeFailure(ctx, raw.method, raw.url);
  // 'hang': never answered (ends when the server closes); 'silent', 'closed': a 200 and no body
  if (failure !== undefined && openedOnly(res, failure.mode)) return undefined;
  if (failure?.mode === 'commit-then-fail') serve(ctx, raw, res);
  return failure?.reply ?? serve(ctx, raw, res);
}

/**
 * Answers a failure that sends no Status: 'hang' nothing at all, 'silent' a 200 left open, 'closed' a
 * 200 ended at once. True when it was one of them (nothing more is sent).
 */
function openedOnly(res: ResponseSink, mode: FailureMode): boolean {
  if (mode === 'hang') return true;
  if (mode !== 'silent' && mode !== 'closed') return false;
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.flushHeaders();
  if (mode === 'closed') res.end();
  return true;
}

/** The caller's node claim, read straight from its Impersonate-Extra header (no full user parse). */
function nodeClaim(headers: IncomingMessage['headers']): string | undefined {
  const value = headers[NODE_CLAIM_HEADER];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

/** kube-apiserver compresses an answer of more than this many bytes for a client that accepts gzip. */
const GZIP_THRESHOLD_BYTES = 128 * 1024;

/** Does an Accept-Encoding header accept gzip? */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((e) => e.split(';')[0]?.trim().toLowerCase() === 'gzip');
}

/** Sends the reply (compressed as kube-apiserver would); the bytes of its body as sent. */
function send(res: ResponseSink, reply: Reply, now: Date, gzip: boolean): number {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return 0;
  }
  // the server's own clock (clockOffsetMs), as kube-apiserver's Date header tells its own
  const headers: Record<string, string> = { 'Content-Type': 'application/json', Date: now.toUTCString() };
  if (reply.code === 429) headers['Retry-After'] = '1';
  const text = JSON.stringify(reply.body);
  let body: Buffer | string = text;
  if (gzip && Buffer.byteLength(text) > GZIP_THRESHOLD_BYTES) {
    body = gzipSync(text);
    headers['Content-Encoding'] = 'gzip';
  }
  res.writeHead(reply.code, headers);
  res.end(body);
  return Buffer.byteLength(body);
}

/** The failure this request meets: an injected one, else one drawn by the chaos setting. */
function takeFailure(
  ctx: HttpContext,
  method: string,
  url: URL,
): { reply: Reply; mode: FailureMode } | undefined {
  const target = url.pathname + url.search;
  const failure = ctx.failures.find(
    (f) =>
      f.remaining > 0 &&
      (f.method === undefined || f.method.toUpperCase() === method) &&
      (f.pathIncludes === undefined || target.includes(f.pathIncludes)),
  );
  if (!failure) return chaosFailure(ctx.chaos, method, url, ctx.registry.now().getTime());
  failure.remaining--;
  const body = statusFor(failure.status, failure.message ?? `injected failure for ${method} ${url.pathname}`);
  if (failure.causes !== undefined) body.details = { ...body.details, causes: failure.causes };
  return { reply: { code: failure.status, body }, mode: failure.mode ?? 'fail' };
}

function chaosFailure(
  chaos: Chaos | undefined,
  method: string,
  url: URL,
  nowMs: number,
): { reply: Reply; mode: FailureMode } | undefined {
  if (chaos === undefined || (chaos.untilMs !== undefined && nowMs >= chaos.untilMs)) return undefined;
  if (!strikes(chaos, method, url)) return undefined;
  const status = chaos.statuses[Math.floor(chaos.random() * chaos.statuses.length)] ?? 500;
  const body = statusFor(status, chaos.message ?? `injected failure for ${method} ${url.pathname}`);
  // drawn only when asked for: a chaos without `committed` draws as it always did
  const committed = chaos.committed !== undefined && chaos.random() < chaos.committed;
  return { reply: { code: status, body }, mode: committed ? 'commit-then-fail' : 'fail' };
}

/** Does the chaos strike this request (it matches, and the draw says so)? Watches only when it says so. */
function strikes(chaos: Chaos, method: string, url: URL): boolean {
  if (url.searchParams.get('watch') === 'true' && chaos.watches !== true) return false;
  if (chaos.method !== undefined && chaos.method.toUpperCase() !== method) return false;
  if (chaos.pathIncludes !== undefined && !(url.pathname + url.search).includes(chaos.pathIncludes))
    return false;
  return chaos.random() < chaos.fraction;
}

/** Media type without parameters (`application/json; charset=utf-8` → `application/json`). */
function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`unable to parse the request body as JSON: ${(err as Error).message}`);
  }
}

/** A request as read off the wire. */
interface RawRequest {
  method: string;
  url: URL;
  text: string;
  header: string | undefined;
  headers: IncomingMessage['headers'];
}

const SELF_SUBJECT_REVIEWS = '/apis/authentication.k8s.io/v1/selfsubjectreviews';

/** `kubectl auth whoami`: the caller as authenticated (here: as its impersonation headers say). */
function selfSubjectReview(raw: RawRequest): Reply {
  const user = userFromHeaders(raw.headers);
  return {
    code: 201,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      metadata: { creationTimestamp: null },
      status: { userInfo: { username: user.username, groups: user.groups, extra: user.extra } },
    },
  };
}

function serve(ctx: HttpContext, raw: RawRequest, res: ResponseSink): Reply | undefined {
  if (raw.method === 'GET' && /^\/(healthz|livez|readyz)\/?$/.test(raw.url.pathname)) {
    return { code: 200, body: 'ok' };
  }
  if (raw.method === 'POST' && raw.url.pathname === SELF_SUBJECT_REVIEWS) return selfSubjectReview(raw);
  const route = parseRoute(raw.url.pathname);
  if (!route) throw apiError(404, 'the server could not find the requested resource', undefined, 'NotFound');
  const parsed: Parsed = {
    method: raw.method,
    url: raw.url,
    route,
    contentType: mediaType(raw.header),
    body: parseJson(raw.text),
    caller: {
      manager: managerOf(raw.url.searchParams, raw.headers['user-agent']),
      user: userFromHeaders(raw.headers),
    },
    accept: raw.headers.accept,
  };
  if (isWatch(parsed)) {
    openWatch(ctx, parsed, res);
    return undefined;
  }
  return route.name === undefined ? collectionVerb(ctx, parsed) : objectVerb(ctx, parsed);
}

function isWatch(p: Parsed): boolean {
  const watch = p.url.searchParams.get('watch');
  return p.method === 'GET' && (watch === 'true' || watch === '1') && p.route.subresource === undefined;
}

function methodNotAllowed(): ApiError {
  return apiError(405, 'the server does not allow this method on the requested resource');
}

function collectionVerb(ctx: HttpContext, p: Parsed): Reply {
  const { def, namespace } = p.route;
  if (p.method === 'GET') {
    const query = p.url.searchParams;
    const filter = parseFilter(def, query);
    const page = listPage(ctx.registry, { def, namespace, filter, query, now: ctx.store.version() });
    const metadata = {
      resourceVersion: page.resourceVersion,
      ...(page.continue === undefined ? {} : { continue: page.continue }),
      ...(page.remainingItemCount === undefined ? {} : { remainingItemCount: page.remainingItemCount }),
    };
    if (wantsTable(p.accept)) {
      const include = includeObject(query.get('includeObject'));
      return { code: 200, body: tableOf(def, page.items, metadata, { include, now: ctx.registry.now() }) };
    }
    const items = page.items.map(listItem);
    return { code: 200, body: { kind: `${def.kind}List`, apiVersion: def.apiVersion, metadata, items } };
  }
  if (p.method === 'POST') return { code: 201, body: ctx.registry.create(def, namespace, p.body, p.caller) };
  throw methodNotAllowed();
}

/** The includeObject of a Table request (default Metadata); 400 for another value, as kube answers. */
function includeObject(value: string | null): IncludeObject {
  if (value === null || value === '') return 'Metadata';
  if (value === 'None' || value === 'Metadata' || value === 'Object') return value;
  throw badRequest(`invalid includeObject "${value}"`);
}

/** kube's list items carry no kind/apiVersion; the list says it once. */
function listItem(obj: StoredObject): unknown {
  const item: Record<string, unknown> = { ...obj };
  Reflect.deleteProperty(item, 'apiVersion');
  Reflect.deleteProperty(item, 'kind');
  return item;
}

function objectVerb(ctx: HttpContext, p: Parsed): Reply {
  const { def, namespace, subresource } = p.route;
  const name = p.route.name ?? '';
  if (subresource === 'eviction') return evict(ctx, p, name);
  switch (p.method) {
    case 'GET':
      return { code: 200, body: ctx.registry.mustGet(def, namespace, name) };
    case 'PUT':
      return {
        code: 200,
        body: ctx.registry.replace(def, { namespace, name, subresource }, p.body, p.caller),
      };
    case 'PATCH':
      return {
        code: 200,
        body: ctx.registry.patch(
          def,
          { namespace, name, subresource },
          { contentType: p.contentType, body: p.body, caller: p.caller },
        ),
      };
    case 'DELETE':
      if (subresource !== undefined) throw methodNotAllowed();
      return {
        code: 200,
        body: ctx.registry.remove(def, { namespace, name }, deleteOptions(p), p.caller).body,
      };
    default:
      throw methodNotAllowed();
  }
}

function evict(ctx: HttpContext, p: Parsed, name: string): Reply {
  if (p.method !== 'POST') throw methodNotAllowed();
  const namespace = p.route.namespace;
  if (namespace === undefined) throw notFound(p.route.def, name);
  const dryRun = p.url.searchParams.get('dryRun');
  if (dryRun !== null && dryRun !== 'All') throw badRequest(`Invalid dryRun value: ${dryRun}`);
  ctx.registry.evict({ namespace, name, dryRun: dryRun === 'All' }, p.body, p.caller);
  return {
    code: 201,
    body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 },
  };
}

function deleteOptions(p: Parsed): DeleteOptions {
  const options = deleteOptionsOf(p.body);
  const query = p.url.searchParams.get('gracePeriodSeconds');
  if (query !== null && options.gracePeriodSeconds === undefined) {
    const seconds = Number(query);
    if (!Number.isInteger(seconds)) throw badRequest(`invalid gracePeriodSeconds "${query}"`);
    options.gracePeriodSeconds = seconds;
  }
  return options;
}

function openWatch(ctx: HttpContext, p: Parsed, res: ResponseSink): void {
  const { def, namespace, name } = p.route;
  const filter = parseFilter(def, p.url.searchParams);
  if (name !== undefined) filter.name = name;
  const asked = Number(p.url.searchParams.get('timeoutSeconds') ?? 0);
  if (!Number.isFinite(asked) || asked < 0) throw badRequest('invalid timeoutSeconds');
  const timeout = asked === 0 ? DEFAULT_WATCH_SECONDS : asked;
  const initial = ctx.registry.list(def, namespace, filter);
  ctx.hub.open(
    {
      def,
      namespace,
      filter,
      resourceVersion: p.url.searchParams.get('resourceVersion') ?? undefined,
      timeoutSeconds: timeout,
      bookmarks: p.url.searchParams.get('allowWatchBookmarks') === 'true',
    },
    res,
    initial,
  );
}
