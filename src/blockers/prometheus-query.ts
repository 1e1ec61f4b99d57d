// QueryBlocker (--blocking-query): a PromQL expression blocks the reboot while it returns any series,
// or a scalar other than 0: "the SLO burn rate is high", "a backup is running", anything Prometheus knows.
import type { Blocker, Verdict } from './blocker.js';
import {
  parseQueryResponse,
  queryPrometheus,
  type PrometheusOptions,
  type Sample,
} from './prometheus-client.js';
import { errorText } from '../text/error-text.js';

export interface QueryBlockerOptions extends PrometheusOptions {
  /** The PromQL expression, evaluated as an instant query. */
  query: string;
}

/** `up{job="x"} = 0`: a series as PromQL shows it. */
function describe(sample: Sample): string {
  const { __name__: name = '', ...labels } = sample.metric;
  const inner = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return `${name}${inner === '' && name !== '' ? '' : `{${inner}}`} = ${sample.value}`;
}

export class QueryBlocker implements Blocker {
  readonly name = 'prometheus-query';

  constructor(private readonly options: QueryBlockerOptions) {}

  async check(signal?: AbortSignal): Promise<Verdict> {
    const { query } = this.options;
    let result;
    try {
      result = parseQueryResponse(await queryPrometheus(this.options, query, signal));
    } catch (err) {
      if (signal?.aborted) throw err;
      return { blocked: true, reason: `cannot evaluate blocking query ${query}: ${errorText(err)}` };
    }
    if (result.kind === 'scalar') {
      if (result.value === 0) return { blocked: false };
      return { blocked: true, reason: `blocking query ${query} returned ${result.value}` };
    }
    const [first] = result.samples;
    if (first === undefined) return { blocked: false };
    const more = result.samples.length > 1 ? ` (and ${result.samples.length - 1} more)` : '';
    return { blocked: true, reason: `blocking query ${query} returned ${describe(first)}${more}` };
  }
}
