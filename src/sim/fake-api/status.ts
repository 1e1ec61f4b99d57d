// Kubernetes Status objects: the shape every error response of the fake API server takes.

/** One entry of `details.causes`. */
interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
  type?: string;
}

/** A `kind: Status` body as kube-apiserver sends it. */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** The reason kube-apiserver gives for an HTTP status it produces without a more specific one. */
const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The reason that goes with an HTTP status code. */
function reasonFor(code: number): string {
  return REASONS[code] ?? 'Unknown';
}

/** An API error carrying the Status body the server answers with. */
export class ApiError extends Error {
  readonly status: StatusBody;

  constructor(status: StatusBody) {
    super(`${String(status.code)} ${status.reason}: ${status.message}`);
    this.name = 'ApiError';
    this.status = status;
  }
}

/** Builds an ApiError; `details` is included only when given. */
export function apiError(
  code: number,
  message: string,
  details?: StatusBody['details'],
  reason: string = reasonFor(code),
): ApiError {
  const status: StatusBody = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
  if (details) status.details = details;
  return new ApiError(status);
}

/** Identifies a resource in messages and `details` the way kube does (`pods`, `daemonsets.apps`). */
export interface ResourceRef {
  plural: string;
  group: string;
}

function qualified(ref: ResourceRef): string {
  return ref.group === '' ? ref.plural : `${ref.plural}.${ref.group}`;
}

function detailsOf(ref: ResourceRef, name: string): NonNullable<StatusBody['details']> {
  return ref.group === '' ? { name, kind: ref.plural } : { name, group: ref.group, kind: ref.plural };
}

export function notFound(ref: ResourceRef, name: string): ApiError {
  return apiError(404, `${qualified(ref)} "${name}" not found`, detailsOf(ref, name));
}

export function alreadyExists(ref: ResourceRef, name: string): ApiError {
  return apiError(409, `${qualified(ref)} "${name}" already exists`, detailsOf(ref, name), 'AlreadyExists');
}

export function conflict(ref: ResourceRef, name: string, why: string): ApiError {
  return apiError(
    409,
    `Operation cannot be fulfilled on ${qualified(ref)} "${name}": ${why}`,
    detailsOf(ref, name),
  );
}

/**
 * 409 as kube-apiserver answers a DELETE, or an eviction, whose preconditions do not hold: it names
 * the Kind, not the resource (rest.BeforeDelete checks them before anything is deleted, dry run too).
 */
export function preconditionFailed(
  kind: { kind: string; group: string },
  name: string,
  why: string,
): ApiError {
  const qualifiedKind = kind.group === '' ? kind.kind : `${kind.kind}.${kind.group}`;
  const details =
    kind.group === '' ? { name, kind: kind.kind } : { name, group: kind.group, kind: kind.kind };
  return apiError(409, `Operation cannot be fulfilled on ${qualifiedKind} "${name}": ${why}`, details);
}

export function badRequest(message: string): ApiError {
  return apiError(400, message);
}

/** 422 as kube-apiserver answers a JSON patch that does not apply (failed `test`, missing path). */
export function patchNotApplicable(message: string): ApiError {
  return apiError(422, 'the server rejected our request due to an error in our request', {
    causes: [{ type: 'UnexpectedServerResponse', message }],
  });
}

/** One field that fails validation, as kube's field.Error. */
export interface FieldError {
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueDuplicate`, `FieldValueNotSupported`. */
  reason: string;
  field: string;
  message: string;
}

/** 422 Invalid for an object that fails validation; kube names the Kind here, not the resource. */
export function invalid(
  kind: { kind: string; group: string },
  name: string,
  errors: readonly FieldError[],
): ApiError {
  const list = errors.map((e) => `${e.field}: ${e.message}`);
  const summary = list.length === 1 ? (list[0] ?? '') : `[${list.join(', ')}]`;
  const details: NonNullable<StatusBody['details']> = {
    name,
    kind: kind.kind,
    causes: errors.map((e) => ({ ...e })),
  };
  if (kind.group !== '') details.group = kind.group;
  return apiError(422, `${kind.kind} "${name}" is invalid: ${summary}`, details);
}

/** A Status for an arbitrary code, as injected failures answer. */
export function statusFor(code: number, message: string): StatusBody {
  return apiError(code, message).status;
}
