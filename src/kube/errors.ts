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

/** 429 or 5xx: the API server is overloaded or failing; an idempotent read may be sent again. */
export function isRetryableRead(err: unknown): boolean {
  const code = statusCode(err);
  return code !== undefined && (code === 429 || (code >= 500 && code <= 599));
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
