// The control channel into a VM of `npm run test:vm`: the QEMU guest agent on a virtio-serial port,
// whose host end is a unix socket (scripts/vm/qemu.mjs). Not the network: the guests reach nothing
// but the API server, and the API server cannot reach their kubelets. Each call opens the socket,
// resynchronises with guest-sync-delimited (a reboot or an earlier timeout may have left anything in
// the channel) and sends one command; a guest that is down answers nothing, and the call fails
// after its deadline.
import { connect } from 'node:net';

const SYNC_MS = 10_000;

interface Reply {
  return?: unknown;
  error?: { class?: string; desc?: string };
}

interface ExecStatus {
  exited: boolean;
  exitcode?: number;
  'out-data'?: string;
  'err-data'?: string;
}

export interface ExecResult {
  code: number;
  out: string;
  err: string;
}

export class GuestAgent {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly socketPath: string) {}

  /** One command, after the handshake; calls on one agent never overlap. */
  call(execute: string, args: Record<string, unknown> | undefined, timeoutMs = SYNC_MS): Promise<unknown> {
    const next = this.queue.then(
      () => this.once(execute, args, timeoutMs),
      () => this.once(execute, args, timeoutMs),
    );
    this.queue = next.catch(() => undefined);
    return next;
  }

  private once(
    execute: string,
    args: Record<string, unknown> | undefined,
    timeoutMs: number,
  ): Promise<unknown> {
    const id = Math.floor(Math.random() * 2 ** 31);
    return new Promise((resolve, reject) => {
      const socket = connect(this.socketPath);
      let buffered = Buffer.alloc(0);
      let synced = false;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`guest agent ${this.socketPath}: no answer to ${execute} within ${timeoutMs} ms`));
      }, timeoutMs);
      const finish = (err: Error | undefined, value?: unknown): void => {
        clearTimeout(timer);
        socket.destroy();
        if (err) reject(err);
        else resolve(value);
      };
      socket.on('error', (err) => {
        finish(err);
      });
      socket.on('connect', () => {
        // 0xFF resets the agent's JSON parser; the sync answer comes after a 0xFF of its own
        socket.write(Buffer.from([0xff]));
        socket.write(`${JSON.stringify({ execute: 'guest-sync-delimited', arguments: { id } })}\n`);
      });
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        if (!synced) {
          const mark = buffered.lastIndexOf(0xff);
          if (mark < 0) return;
          buffered = buffered.subarray(mark + 1);
        }
        for (;;) {
          const nl = buffered.indexOf(0x0a);
          if (nl < 0) return;
          const line = buffered.subarray(0, nl).toString('utf8').trim();
          buffered = buffered.subarray(nl + 1);
          if (line === '') continue;
          const reply = JSON.parse(line) as Reply;
          if (!synced) {
            if (reply.return !== id) continue;
            synced = true;
            socket.write(`${JSON.stringify({ execute, ...(args ? { arguments: args } : {}) })}\n`);
            continue;
          }
          if (reply.error) finish(new Error(`guest agent ${execute}: ${reply.error.desc ?? 'error'}`));
          else finish(undefined, reply.return);
          return;
        }
      });
    });
  }

  /** Runs a shell script in the guest (as root) and waits for it. */
  async sh(script: string, timeoutMs = 60_000): Promise<ExecResult> {
    const started = (await this.call('guest-exec', {
      path: '/bin/sh',
      arg: ['-c', script],
      'capture-output': true,
    })) as { pid: number };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = (await this.call('guest-exec-status', { pid: started.pid })) as ExecStatus;
      if (status.exited) {
        const text = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
        return { code: status.exitcode ?? -1, out: text(status['out-data']), err: text(status['err-data']) };
      }
      if (Date.now() > deadline)
        throw new Error(`guest script did not finish within ${timeoutMs} ms: ${script}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The script's standard output; rejects when it exits non-zero. */
  async output(script: string, timeoutMs?: number): Promise<string> {
    const result = await this.sh(script, timeoutMs);
    if (result.code !== 0)
      throw new Error(`guest script exited ${result.code}: ${script}: ${result.err.trim()}`);
    return result.out;
  }

  /** The running kernel's boot ID. */
  async bootId(): Promise<string> {
    return (await this.output('cat /proc/sys/kernel/random/boot_id')).trim();
  }
}
