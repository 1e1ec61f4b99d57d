// The samples of a Prometheus text exposition, by series name with labels.
import type { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.js';

export async function samples(metrics: PrometheusMetrics): Promise<Map<string, number>> {
  const text = await metrics.metrics();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
