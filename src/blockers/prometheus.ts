// PrometheusBlocker: active ALERTS block a reboot, with kured's filter semantics.
import { httpText } from '../http/request.js';
import type { ProxySettings } from '../http/proxy.js';
import type { Blocker, Verdict } from './blocker.js';
import { errorText } from '../text/error-text.js';

export interface PrometheusBlockerOptions {
  /** --prometheus-url, e.g. http://prometheus.monitoring:9090 (a path prefix is kept). */
  url: string;
  /** --alert-filter-regexp: undefined = every alert counts. */
  filter: RegExp | undefined;
  /** --alert-filter-match-only: the filter selects the alerts that count instead of ignoring them. */
  matchOnly: boolean;
  /** --alert-firing-only: pending alerts do not count. */
  firingOnly: boolean;
  /** Bound on one whole query: connect, send, the complete answer. Default 10 s. */
  timeoutMs?: number;
  /** Bound on the answer's size. Default 4 MiB (MAX_ANSWER_BYTES). */
  maxBytes?: number;
  /** HTTP(S)_PROXY and NO_PROXY. Default none (direct). */
  proxy?: ProxySettings;
}

/** An ALERTS answer larger than this is refused (a real one is a few kB even with hundreds of alerts). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

interface Sample {
  metric: Record<string, string>;
  value: number;
}

/** kured's matchesRegex: no filter counts everything; else match == matchOnly. */
function counts(filter: RegExp | undefined, matchOnly: boolean, alertName: string): boolean {
  if (filter === undefined) return true;
  filter.lastIndex = 0;
  return filter.test(alertName) === matchOnly;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseSample(raw: unknown): Sample {
  if (!isRecord(raw) || !isRecord(raw.metric) || !Array.isArray(raw.value)) {
    throw new Error('malformed sample in the ALERTS response');
  }
  const metric: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw.metric)) metric[k] = String(v);
  const value = Number(raw.value[1]);
  if (raw.value.length !== 2 || Number.isNaN(value))
    throw new Error('malformed sample value in the ALERTS response');
  return { metric, value };
}

/** The samples of an instant-query response body; throws on anything but a vector result. */
export function parseAlertsResponse(body: unknown): Sample[] {
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
  const data = json.data;
  if (!isRecord(data) || data.resultType !== 'vector' || !Array.isArray(data.result)) {
    throw new Error('unexpected result type (want a vector)');
  }
  return data.result.map(parseSample);
}

export class PrometheusBlocker implements Blocker {
  readonly name = 'prometheus';

  constructor(private readonly options: PrometheusBlockerOptions) {}

  /** Names of the alerts that block now, sorted; throws when Prometheus cannot say. */
  async activeAlerts(signal?: AbortSignal): Promise<string[]> {
    const samples = parseAlertsResponse(await this.query(signal));
    const names = new Set<string>();
    for (const sample of samples) {
      const name = sample.metric.alertname;
      if (name !== undefined && this.counts(name, sample)) names.add(name);
    }
    return [...names].sort();
  }

  private counts(name: string, sample: Sample): boolean {
    if (sample.value === 0) return false;
    if (!counts(this.options.filter, this.options.matchOnly, name)) return false;
    return !this.options.firingOnly || sample.metric.alertstate === 'firing';
  }

  /** The raw body of `GET /api/v1/query?query=ALERTS`; throws on transport errors, the bounds and non-2xx. */
  private async query(signal?: AbortSignal): Promise<string> {
    const base = this.options.url.endsWith('/') ? this.options.url : `${this.options.url}/`;
    const url = new URL('api/v1/query', base);
    url.searchParams.set('query', 'ALERTS');
    const { status, text } = await httpText(url.toString(), {
      headers: { Accept: 'application/json' },
      deadlineMs: this.options.timeoutMs ?? 10_000,
      maxBytes: this.options.maxBytes ?? MAX_ANSWER_BYTES,
      ...(signal === undefined ? {} : { signal }),
      ...(this.options.proxy === undefined ? {} : { proxy: this.options.proxy }),
    });
    if (status >= 200 && status < 300) return text;
    throw new Error(
      `HTTP ${status} from ${url.origin}${url.pathname}${text === '' ? '' : `: ${text.slice(0, 120)}`}`,
    );
  }

  async check(signal?: AbortSignal): Promise<Verdict> {
    let alerts: string[];
    try {
      alerts = await this.activeAlerts(signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      const text = errorText(err);
      return { blocked: true, reason: `cannot query Prometheus alerts: ${text}` };
    }
    if (alerts.length === 0) return { blocked: false };
    return { blocked: true, reason: `${alerts.length} active alert(s): ${alerts.join(', ')}` };
  }
}
