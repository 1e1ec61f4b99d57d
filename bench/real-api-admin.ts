// The benchmark's own requests to the real kube-apiserver (set-up, the simulated kubelets, the
// observer's watches, /metrics), as system:masters over its own connections. It counts what it
// asks and what it is sent, so that the benchmark's own share can be taken out of the server's
// counters: what remains is what kured-ts cost.
import { Agent, request } from 'node:https';

/** What the benchmark itself sent and received (resource requests only). */
export interface OwnTraffic {
  /** Requests (a watch counted when it starts) by "VERB resource[/subresource]", as the server counts. */
  byKind: Map<string, number>;
  /** Response bytes of requests plus the bytes of every watch event line. */
  bytes: number;
}

/** The key apiserver_request_total gives a request: verb (GET/LIST/WATCH/…) and resource[/sub]. */
function kindOf(method: string, path: string, watch = false): string | undefined {
  const parts = (path.split('?')[0] ?? '').split('/').filter((p) => p !== '');
  let rest: string[];
  if (parts[0] === 'api') rest = parts.slice(2);
  else if (parts[0] === 'apis') rest = parts.slice(3);
  else return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource = '', name, sub] = rest;
  const verb = method !== 'GET' ? method : watch ? 'WATCH' : name === undefined ? 'LIST' : 'GET';
  return `${verb} ${resource}${sub === undefined ? '' : `/${sub}`}`;
}

/** A non-2xx answer. */
class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status}: ${body.slice(0, 300)}`);
  }
}

export interface AdminRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  contentType?: string;
  accept?: string;
  /** Asked for a gzip answer (as client-go and our client ask): the body counted is what was sent. */
  gzip?: boolean;
}

export class AdminClient {
  readonly own: OwnTraffic = { byKind: new Map(), bytes: 0 };
  private readonly agent: Agent;

  constructor(
    readonly url: string,
    private readonly token: string,
    ca: string,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: 64, ca });
  }

  close(): void {
    this.agent.destroy();
  }

  /** The raw answer (any status). */
  send(req: AdminRequest): Promise<{ status: number; text: string; bytes: number }> {
    const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.token}`,
      Accept: req.accept ?? 'application/json',
      'User-Agent': 'kured-ts-bench',
    };
    if (req.gzip === true) headers['Accept-Encoding'] = 'gzip';
    if (payload !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const kind = kindOf(req.method, req.path);
    return new Promise((resolve, reject) => {
      const r = request(
        new URL(req.path, this.url),
        { method: req.method, headers, agent: this.agent, timeout: 60_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            if (kind !== undefined) {
              this.count(kind);
              this.own.bytes += body.length;
            }
            resolve({ status: res.statusCode ?? 0, text: body.toString('utf8'), bytes: body.length });
          });
          res.on('error', reject);
        },
      );
      r.on('timeout', () => r.destroy(new Error(`${req.method} ${req.path}: no answer in 60 s`)));
      r.on('error', reject);
      r.end(payload);
    });
  }

  /** The parsed JSON answer; throws AdminApiError unless 2xx (or a status in `accept`). */
  async json<T>(req: AdminRequest, accept: readonly number[] = []): Promise<T | undefined> {
    const answer = await this.send(req);
    if (accept.includes(answer.status)) return undefined;
    if (answer.status < 200 || answer.status > 299)
      throw new AdminApiError(answer.status, answer.text, `${req.method} ${req.path}`);
    return JSON.parse(answer.text) as T;
  }

  /**
   * One watch: every event line parsed to `onEvent` until the server ends the stream or `signal`
   * aborts. Resolves on either; rejects when the answer is not 200 or the connection breaks.
   */
  watch(
    path: string,
    onEvent: (event: { type: string; object: unknown }) => void,
    signal: AbortSignal,
    accept?: string,
  ): Promise<void> {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: accept ?? 'application/json' };
    this.count(kindOf('GET', path, true) ?? 'WATCH ?');
    return new Promise((resolve, reject) => {
      const r = request(new URL(path, this.url), { headers, agent: this.agent, signal }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new AdminApiError(res.statusCode ?? 0, '', `WATCH ${path}`));
          return;
        }
        let rest = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          this.own.bytes += Buffer.byteLength(chunk);
          rest += chunk;
          const lines = rest.split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines)
            if (line.trim() !== '') onEvent(JSON.parse(line) as { type: string; object: unknown });
        });
        res.on('end', resolve);
        res.on('close', resolve);
        res.on('error', (err) => {
          if (signal.aborted) resolve();
          else reject(err);
        });
      });
      r.on('error', (err) => {
        if (signal.aborted) resolve();
        else reject(err);
      });
      r.end();
    });
  }

  /** A snapshot of the benchmark's own traffic so far. */
  ownSoFar(): OwnTraffic {
    return { byKind: new Map(this.own.byKind), bytes: this.own.bytes };
  }

  private count(kind: string): void {
    this.own.byKind.set(kind, (this.own.byKind.get(kind) ?? 0) + 1);
  }

  /** GET /metrics as text (a non-resource request: not counted as the benchmark's own). */
  async metrics(): Promise<string> {
    const answer = await this.send({ method: 'GET', path: '/metrics', accept: 'text/plain' });
    if (answer.status !== 200) throw new AdminApiError(answer.status, answer.text, 'GET /metrics');
    return answer.text;
  }
}
