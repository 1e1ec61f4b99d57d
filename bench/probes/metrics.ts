// Probe: prom-client with the agent's registry and process metrics.
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.js';
import { reportRss } from './rss.js';

reportRss(new PrometheusMetrics('n1'));
