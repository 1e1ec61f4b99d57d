// Instant queries to Prometheus' HTTP API, shared by the alert blocker and the query blocker: one
// deadline over the whole exchange, a bound on the answer's size, HTTP(S)_PROXY honoured, and an
// answer checked field by field (anything unexpected is an error, which blocks: fail-safe).
import type { ProxySettings } from '../http/proxy.js';
import { httpText } from '../http/request.js';

/** An answer larger than this is refused (a real ALERTS answer is a few kB even with hundreds of alerts). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface PrometheusOptions {
  /** --prometheus-url, e.g. http://prometheus.monitoring:9090 (a path prefix is kept). */
  url: string;
  /** Bound on one whole query: connect, send, the complete answer. Default 10 s. */
  timeoutMs?: number;
  /** Bound on the answer's size. Default 4 MiB (MAX_ANSWER_BYTES). */
  maxBytes?: number;
  /** HTTP(S)_PROXY and NO_PROXY. Default none (direct). */
  proxy?: ProxySettings;
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

/** What an instant query returns: a vector of series, or a scalar. */
export type QueryResult = { kind: 'vector'; samples: Sample[] } | { kind: 'scalar'; value: number };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A `[time, "value"]` pair's value; throws when it is not a number. */
function sampleValue(raw: unknown): number {
  if (!Array.isArray(raw) || raw.length !== 2) throw new Error('malformed sample value in the response');
  const value = Number(raw[1]);
  if (Number.isNaN(value) && raw[1] !== 'NaN') throw new Error('malformed sample value in the response');
  return value;
}

function parseSample(raw: unknown): Sample {
  if (!isRecord(raw) || !isRecord(raw.metric) || !Array.isArray(raw.value)) {
    throw new Error('malformed sample in the response');
  }
  const metric: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw.metric)) metric[k] = String(v);
  return { metric, value: sampleValue(raw.value) };
}

/** The `data` of a successful answer; throws with Prometheus' own error otherwise. */
function successData(body: unknown): Record<string, unknown> {
  let json: unknown = body;
  if (typeof body === 'string') {
    try {
      json = JSON.parse(body);
    } catch {
      throw new Error(`response is not JSON: ${body.slice(0, 80)}`);
    }
  }
  if (!isRecord(json)) throw new Error('response is not a JSON object');
  if (json.status !== 'success') {
    const error = typeof json.error === 'string' ? `: ${json.error}` : '';
    const status = json.status === undefined ? 'absent' : JSON.stringify(json.status);
    throw new Error(`query not successful (status ${status})${error}`);
  }
  if (!isRecord(json.data)) throw new Error('response has no data');
  return json.data;
}

/** An instant query's answer; throws on a range (matrix) or string result. */
export function parseQueryResponse(body: unknown): QueryResult {
  const data = successData(body);
  if (data.resultType === 'vector' && Array.isArray(data.result)) {
    return { kind: 'vector', samples: data.result.map(parseSample) };
  }
  if (data.resultType === 'scalar') return { kind: 'scalar', value: sampleValue(data.result) };
  throw new Error(`unexpected result type ${JSON.stringify(data.resultType)} (want a vector or a scalar)`);
}

/** The samples of an instant query that must return a vector (ALERTS). */
export function parseAlertsResponse(body: unknown): Sample[] {
  const result = parseQueryResponse(body);
  if (result.kind !== 'vector') throw new Error('unexpected result type "scalar" (want a vector)');
  return result.samples;
}

/** The raw answer to `GET /api/v1/query?query=EXPR`; throws on transport errors, the bounds and non-2xx. */
export async function queryPrometheus(
  options: PrometheusOptions,
  expr: string,
  signal?: AbortSignal,
): Promise<string> {
  const base = options.url.endsWith('/') ? options.url : `${options.url}/`;
  const url = new URL('api/v1/query', base);
  url.searchParams.set('query', expr);
  const { status, text } = await httpText(url.toString(), {
    headers: { Accept: 'application/json' },
    deadlineMs: options.timeoutMs ?? 10_000,
    maxBytes: options.maxBytes ?? MAX_ANSWER_BYTES,
    ...(signal === undefined ? {} : { signal }),
    ...(options.proxy === undefined ? {} : { proxy: options.proxy }),
  });
  if (status >= 200 && status < 300) return text;
  throw new Error(
    `HTTP ${status} from ${url.origin}${url.pathname}${text === '' ? '' : `: ${text.slice(0, 120)}`}`,
  );
}
