// Classification of API errors by HTTP status: the one place that knows what our API transport
// (src/kube/http.ts, KubeApiError) and client-node's watch throw.

/** The parsed Status object of a failed API call (kube-apiserver's metav1.Status), as far as we use it. */
export interface ApiStatus {
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string; field?: string }[] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The HTTP status of a failed call: KubeApiError (src/kube/http.ts) carries it as `code`, client-node's
 * watch as `statusCode`. Undefined for network errors and everything else.
 */
export function statusCode(err: unknown): number | undefined {
  if (!isRecord(err)) return undefined;
  const code = err.code ?? err.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** The Status body of a failed call (kept as the raw JSON text the API server sent), parsed. */
export function statusBody(err: unknown): ApiStatus | undefined {
  if (!isRecord(err)) return undefined;
  let body: unknown = err.body;
  if (typeof body === 'string') {
    const text = body;
    try {
      body = JSON.parse(text);
    } catch {
      return text === '' ? undefined : { message: text };
    }
  }
  return isRecord(body) ? body : undefined;
}

/** A one-line message for logs and reasons: the API's Status message, else the error's own text. */
export function statusMessage(err: unknown): string {
  const message = statusBody(err)?.message;
  const code = statusCode(err);
  if (message !== undefined && message !== '') return code === undefined ? message : `${message} (${code})`;
  if (err instanceof Error) return err.message.split('\n')[0] ?? err.message;
  return String(err);
}

const is =
  (code: number) =>
  (err: unknown): boolean =>
    statusCode(err) === code;

/** 403 Forbidden: RBAC (or an admission policy) does not allow this request. */
export const isForbidden = is(403);
/** 404 Not Found. */
export const isNotFound = is(404);
/** 409 Conflict: a resourceVersion precondition failed or the object was modified meanwhile. */
export const isConflict = is(409);
/** 410 Gone: a watch's resourceVersion is too old. */
export const isGone = is(410);
/** 422 Unprocessable Entity: invalid object, or a JSON patch `test` operation failed. */
export const isInvalid = is(422);
/** 429 Too Many Requests: an eviction refused by a PodDisruptionBudget (or API throttling). */
export const isTooManyRequests = is(429);

/**
 * Whom an answer is about (issue 46). `request`: the request or its object (a denial, 400, 403, 404,
 * 409, 422, a PodDisruptionBudget's 429, the 500 of a pod under two budgets): the same request gets
 * the same answer, so the caller acts on it. `server`: the API server itself (500, 502, 503, 504, 408,
 * a 429 of API Priority and Fairness, no answer in time, a reset or refused connection): another try
 * may pass, after a back-off (the server's Retry-After honoured). Anything else (an answer we cannot
 * place) is about the request: it is acted on, never retried without end.
 */
export type AnswerClass = 'request' | 'server';

/** The class of a failed call's answer (see AnswerClass). */
export function answerClass(err: unknown): AnswerClass {
  if (isDenial(err)) return 'request';
  const code = statusCode(err);
  if (code === undefined) return isTimeout(err) || isConnectionError(err) ? 'server' : 'request';
  return serverStatus(code, err) ? 'server' : 'request';
}

/** Is an answer with HTTP status `code` (and no denial) about the server? */
function serverStatus(code: number, err: unknown): boolean {
  if (code === 429) return !isBudgetRefusal(err);
  if (code === 500) return !underSeveralBudgets(err);
  return code === 408 || code >= 502;
}

/** Is this answer about the API server (answerClass), not about the request? */
export function isServerError(err: unknown): boolean {
  return answerClass(err) === 'server';
}

/**
 * An answer about the server that is worth sending an idempotent request again inside the call: not
 * one that came too late (that call's deadline is spent: the caller's next step decides).
 */
export function isRetryableRead(err: unknown): boolean {
  return isServerError(err) && !isTimeout(err);
}

/** No answer within the call's deadline (our transport's TimeoutError, or one wrapped as a cause). */
export function isTimeout(err: unknown): boolean {
  return inChain(err, (e) => e.name === 'TimeoutError');
}

/** Node's codes for a connection that failed, broke or was refused before a whole answer came. */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/** A network error (ours wraps Node's as its cause): reset, refused, a hang-up mid-answer. */
function isConnectionError(err: unknown): boolean {
  return inChain(
    err,
    (e) =>
      (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) ||
      /socket hang up/i.test(String(e.message)),
  );
}

/** Does `test` hold for the error or one of its causes (a few levels deep)? */
function inChain(err: unknown, test: (e: Record<string, unknown>) => boolean): boolean {
  let e: unknown = err;
  for (let depth = 0; isRecord(e) && depth < 5; depth++) {
    if (test(e)) return true;
    e = e.cause;
  }
  return false;
}

/**
 * A 429 from a PodDisruptionBudget (its DisruptionBudget cause, or kube's message `Cannot evict pod as
 * it would violate the pod's disruption budget.`), not from API Priority and Fairness.
 */
export function isBudgetRefusal(err: unknown): boolean {
  if (statusCode(err) !== 429) return false;
  const body = statusBody(err);
  if ((body?.details?.causes ?? []).some((c) => c.reason === 'DisruptionBudget')) return true;
  return /disruption budget/i.test(body?.message ?? '');
}

/** kube-apiserver's answer (500) for an eviction of a pod under more than one PodDisruptionBudget. */
export function underSeveralBudgets(err: unknown): boolean {
  return statusCode(err) === 500 && /more than one PodDisruptionBudget/i.test(statusMessage(err));
}

/** The Retry-After (seconds) the API server gave with a failed answer, if any. */
export function retryAfterSeconds(err: unknown): number | undefined {
  if (!isRecord(err)) return undefined;
  const value = err.retryAfterSeconds;
  return typeof value === 'number' ? value : undefined;
}

/** 409 or 422: our optimistic write lost a race; re-read and try again. */
export function isConflictOrInvalid(err: unknown): boolean {
  return isConflict(err) || isInvalid(err);
}

/** A ValidatingAdmissionPolicy's denial of a request: which policy, and what its message says. */
export interface PolicyDenial {
  /** The policy's name, e.g. `kured-ts-agent-eviction`. */
  policy: string;
  /** What its validation's message says. */
  message: string;
}

/**
 * A denial of the request by admission: a ValidatingAdmissionPolicy (policyDenial), or a webhook
 * (`admission webhook "NAME" denied the request: …`), whatever HTTP status it chose: no retry would
 * pass it. A webhook that could not be called (`failed calling webhook`) denied nothing.
 */
export function isDenial(err: unknown): boolean {
  return policyDenial(err) !== undefined || webhookDenial(err) !== undefined;
}

/** An admission webhook's denial of a request: which webhook, and what it said. */
export interface WebhookDenial {
  webhook: string;
  message: string;
}

/** A validating or mutating webhook's denial (kube-apiserver's words); undefined for anything else. */
export function webhookDenial(err: unknown): WebhookDenial | undefined {
  if ((statusCode(err) ?? 0) < 400) return undefined;
  const text = statusBody(err)?.message ?? '';
  const m = /admission webhook "([^"]+)" denied the request(?::\s*(.*))?$/s.exec(text);
  return m?.[1] === undefined ? undefined : { webhook: m[1], message: m[2] ?? 'without explanation' };
}

/**
 * kube-apiserver's answer to a request a ValidatingAdmissionPolicy denied (403 Forbidden, or the
 * code of the validation's reason): `… ValidatingAdmissionPolicy 'NAME' with binding 'BINDING'
 * denied request: MESSAGE`, also when wrapped as the `cause` of an error that adds context (a few
 * levels deep). undefined for every other failure.
 */
export function policyDenial(err: unknown, depth = 0): PolicyDenial | undefined {
  const denial = denialIn(err);
  if (denial !== undefined) return denial;
  const cause = err instanceof Error ? err.cause : undefined;
  return cause === undefined || depth >= 4 ? undefined : policyDenial(cause, depth + 1);
}

/** The denial in this one error's Status (not its causes). */
function denialIn(err: unknown): PolicyDenial | undefined {
  const code = statusCode(err) ?? 0;
  if (code < 400 || code >= 500) return undefined;
  const text = statusBody(err)?.message ?? '';
  const m = /ValidatingAdmissionPolicy '([^']+)'(?: with binding '[^']*')? denied request: (.*)$/s.exec(text);
  return m?.[1] === undefined ? undefined : { policy: m[1], message: m[2] ?? '' };
}
