// A forward HTTP proxy on loopback, as a corporate proxy behaves: absolute-form requests for http://
// targets, CONNECT tunnels for https://. It resolves the names the test gives it (e.g.
// prometheus.test → 127.0.0.1:9090), which nothing else can, so a request that arrives proves it
// went through the proxy. It records what it was asked.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

interface ProxyRecord {
  /** 'GET http://prometheus.test:9090/api/v1/query?query=ALERTS' or 'CONNECT hooks.test:443'. */
  line: string;
  /** The Proxy-Authorization header, if any. */
  authorization?: string;
}

export interface ForwardProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  records: ProxyRecord[];
  close: () => Promise<void>;
}

/** `hosts` maps a name the proxy resolves to a loopback port. */
export async function startForwardProxy(hosts: Record<string, number>): Promise<ForwardProxy> {
  const records: ProxyRecord[] = [];
  const sockets = new Set<Socket>();
  const record = (req: IncomingMessage): void => {
    const authorization = req.headers['proxy-authorization'];
    records.push({
      line: `${req.method ?? ''} ${req.url ?? ''}`,
      ...(authorization === undefined ? {} : { authorization }),
    });
  };
  const server: Server = createServer((req, res) => {
    record(req);
    const target = new URL(req.url ?? '');
    const port = hosts[target.hostname];
    if (port === undefined) {
      res.writeHead(502).end(`proxy: unknown host ${target.hostname}`);
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = request(
      { host: '127.0.0.1', port, method: req.method, path: `${target.pathname}${target.search}`, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    record(req);
    sockets.add(client);
    const [host = ''] = (req.url ?? '').split(':');
    const local = hosts[host];
    if (local === undefined) {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = connect(local, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    records,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
