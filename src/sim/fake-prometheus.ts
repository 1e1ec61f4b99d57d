// A Prometheus for the simulator: answers `ALERTS` queries on 127.0.0.1 with one alert that fires
// until a virtual time, so the agents' real PrometheusBlocker (axios, HTTP) is exercised as in a cluster.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakePrometheus {
  readonly url: string;
  /** Queries answered. */
  readonly queries: number;
  close(): Promise<void>;
}

const SIM_ALERT = 'SimulatedHighErrorRate';

/** Serves /api/v1/query: the alert is firing while `firing()` says so. */
export async function startFakePrometheus(firing: () => boolean): Promise<FakePrometheus> {
  let queries = 0;
  const server = createServer((req, res) => {
    if (!(req.url ?? '').startsWith('/api/v1/query')) {
      res.writeHead(404).end();
      return;
    }
    queries++;
    const now = Date.now() / 1000;
    const result = firing()
      ? [
          {
            metric: { __name__: 'ALERTS', alertname: SIM_ALERT, alertstate: 'firing', severity: 'page' },
            value: [now, '1'],
          },
        ]
      : [];
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    get queries() {
      return queries;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
