// Keep-alive connections to the API server for one KubeConfig.
//
// client-node 1.4.0 builds a new http(s).Agent for every API call (KubeConfig.createAgent, called
// from applySecurityAuthentication, and from applyToHTTPSOptions for watches), so every call opens
// a new TCP connection and, in production, does a new TLS handshake. KubeConfig has no option for
// this; its private createAgent is the only seam. installKeepAliveAgents() wraps it on one instance:
// client-node still chooses and builds the agent exactly as before (http for an http:// server with
// skipTLSVerify, https otherwise, hpagent or socks for a cluster proxyUrl, the same error for http
// without skipTLSVerify), with the same TLS options (CA, client certificate and key, pfx,
// passphrase, rejectUnauthorized from skipTLSVerify, servername from tls-server-name), plus
// keep-alive; and the agent is built once per distinct set of those options and then reused.
//
// Hazards:
// - The options are compared by value, not identity: client-node re-reads CA and certificate files
//   on every call, and an exec credential plugin may hand out a new client certificate at any time.
//   New options get a new agent (new connections, the new certificate); the old agent's connections
//   fall idle and close after IDLE_SOCKET_MS, and beyond MAX_AGENTS the oldest agent is forgotten.
// - An idle connection can be closed by the server (or a load balancer) while we send on it, which
//   fails that one call (ECONNRESET). Idle connections are therefore closed after IDLE_SOCKET_MS,
//   before the idle timeouts of common load balancers (60 s and more) and servers. The timeout does
//   not touch a connection in use: Node's agent only destroys idle sockets on it, and node-fetch
//   ignores the request's 'timeout' event, so a quiet watch lives on. Not so through a socks proxy
//   (socks-proxy-agent destroys the socket on 'timeout'), which therefore gets no idle timeout.
// - Idle sockets are unref'd by Node, so they do not keep a CLI command's process alive.
import { createHash } from 'node:crypto';
import type { Agent } from 'node:http';
import type { AgentOptions } from 'node:https';
import type { Cluster, KubeConfig } from '@kubernetes/client-node';

/** Idle keep-alive connections are closed after this long. */
export const IDLE_SOCKET_MS = 30_000;

/** At most this many agents (distinct option sets) are kept; the oldest is dropped first. */
const MAX_AGENTS = 4;

type CreateAgent = (cluster: Cluster | null, options: AgentOptions) => Agent;

/** The private member of KubeConfig we wrap (client-node 1.4.0, dist/config.js). */
interface AgentFactory {
  createAgent: CreateAgent;
}

/** The keep-alive agents of one KubeConfig; close() ends their connections. */
export class KeepAliveAgents {
  private readonly agents = new Map<string, Agent>();

  constructor(private readonly build: CreateAgent) {}

  /** The agent for these options: the one built before for equal options, else a new one. */
  agentFor(cluster: Cluster | null, options: AgentOptions): Agent {
    const key = fingerprint(cluster, options);
    const known = this.agents.get(key);
    if (known !== undefined) return known;
    // socks-proxy-agent destroys a socket in use when `timeout` passes without traffic: a quiet watch
    const socks = cluster?.proxyUrl?.startsWith('socks') === true;
    const idle = socks || options.timeout !== undefined ? {} : { timeout: IDLE_SOCKET_MS };
    const agent = this.build(cluster, { ...options, keepAlive: true, ...idle });
    this.agents.set(key, agent);
    const oldest = this.agents.keys().next().value;
    if (this.agents.size > MAX_AGENTS && oldest !== undefined) this.agents.delete(oldest);
    return agent;
  }

  /** Agents built so far and still kept. */
  get size(): number {
    return this.agents.size;
  }

  /**
   * Destroys the connections, in flight or idle, of every agent kept (a forgotten agent's idle ones
   * close after IDLE_SOCKET_MS by themselves); later calls open new ones.
   */
  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/**
 * Makes `kubeConfig` hand the same keep-alive agent to every request with the same TLS options.
 * Mutates `kubeConfig` (its createAgent); a KubeConfig should be given to one client only.
 */
export function installKeepAliveAgents(kubeConfig: KubeConfig): KeepAliveAgents {
  const factory = kubeConfig as unknown as Partial<AgentFactory>;
  if (typeof factory.createAgent !== 'function') {
    throw new Error(
      "@kubernetes/client-node's KubeConfig has no createAgent to wrap (was client-node upgraded from 1.4.0?): connections to the API server cannot be kept alive",
    );
  }
  const original = factory.createAgent.bind(kubeConfig);
  const agents = new KeepAliveAgents(original);
  factory.createAgent = (cluster, options) => agents.agentFor(cluster, options);
  return agents;
}

/** A digest of everything createAgent decides on, so that no key holds a private key or passphrase. */
function fingerprint(cluster: Cluster | null, options: AgentOptions): string {
  const hash = createHash('sha256');
  const add = (value: unknown): void => {
    if (Buffer.isBuffer(value)) hash.update(value);
    else if (Array.isArray(value)) for (const item of value) add(item);
    else if (value === undefined || typeof value === 'function') hash.update(typeof value);
    else hash.update(JSON.stringify(value));
    hash.update('\0');
  };
  add([cluster?.server, cluster?.proxyUrl, cluster?.skipTLSVerify]);
  const record = options as Record<string, unknown>;
  for (const name of Object.keys(record).sort()) {
    if (record[name] !== undefined) add([name, record[name]]);
  }
  return hash.digest('hex');
}
