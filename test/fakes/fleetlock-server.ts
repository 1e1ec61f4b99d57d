// A FleetLock server on 127.0.0.1 for the tests: the protocol's rules (src/sim/fake-fleetlock.ts:
// groups of N slots, idempotent pre-reboot for a holder, steady-state releasing) served over real
// HTTP, with a world that misbehaves on demand: answer 500, hang (never answer), go down and come
// back on the same port with or without its slots. Counters are the tests' sync points.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { FakeFleetLock } from '../../src/sim/fake-fleetlock.js';

export type FleetLockMode = 'ok' | 'error-500' | 'hang';

export class FleetLockServer {
  readonly state: FakeFleetLock;
  mode: FleetLockMode = 'ok';
  /** Requests received, by path (answered or not). */
  readonly requests = { total: 0, preReboot: 0, steadyState: 0, hung: 0, failed: 0 };
  private server: http.Server | undefined;
  private readonly sockets = new Set<Socket>();
  private port = 0;

  constructor(slots: number) {
    this.state = new FakeFleetLock(slots);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Listens (on the port it had, after a stop). */
  async start(): Promise<void> {
    const server = http.createServer((req, res) => {
      this.handle(req, res);
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        resolve();
      });
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Goes down: connections dropped, new ones refused. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  }

  /** Down and up again on the same port; `keepState: false` forgets every slot (no persistence). */
  async restart(keepState: boolean): Promise<void> {
    await this.stop();
    if (!keepState) this.state.reset();
    await this.start();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.requests.total++;
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path.endsWith('/pre-reboot')) this.requests.preReboot++;
      if (path.endsWith('/steady-state')) this.requests.steadyState++;
      if (this.mode === 'hang') {
        this.requests.hung++;
        return; // never answered: the client's deadline ends it
      }
      if (this.mode === 'error-500') {
        this.requests.failed++;
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'internal_error', value: 'database unavailable' }));
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
      );
      const reply = this.state.answer({
        method: req.method ?? 'GET',
        path,
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(reply.status, { 'Content-Type': 'application/json' });
      res.end(reply.body);
    });
  }
}

/** A FleetLock server of `slots` per group, listening. */
export async function startFleetLockServer(slots: number): Promise<FleetLockServer> {
  const server = new FleetLockServer(slots);
  await server.start();
  return server;
}
