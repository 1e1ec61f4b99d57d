// HTTP_PROXY, HTTPS_PROXY and NO_PROXY for the agent's own HTTP clients (Prometheus, notifications),
// with the meaning Go's net/http gives them, so that a kured user's proxy settings keep working:
// upper case before lower case, a proxy without a scheme is http://, loopback and localhost never go
// through a proxy, and NO_PROXY lists hosts, domains (with or without a leading dot, matching their
// subdomains), IP addresses, CIDR ranges, each optionally with a port, or `*` for everything.
// The Kubernetes API is not reached through these: client-node has its own proxy configuration.
import { hideUserInfo } from '../text/redact.js';
import type http from 'node:http';
import { BlockList, isIP } from 'node:net';

/** The proxy settings in effect; '' = none. */
export interface ProxySettings {
  /** Proxy for http:// targets (HTTP_PROXY). */
  readonly httpProxy: string;
  /** Proxy for https:// targets (HTTPS_PROXY). */
  readonly httpsProxy: string;
  /** NO_PROXY as written. */
  readonly noProxy: string;
}

export const NO_PROXY: ProxySettings = { httpProxy: '', httpsProxy: '', noProxy: '' };

/** The variables read (each also in lower case), as Go's net/http reads them. */
export const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY'] as const;

type Env = Readonly<Record<string, string | undefined>>;

function either(env: Env, upper: string): string {
  return (env[upper] ?? '').trim() || (env[upper.toLowerCase()] ?? '').trim();
}

/** A proxy variable that cannot be used. */
export class ProxyEnvError extends Error {
  constructor(
    readonly variable: string,
    /** The value, user and password hidden. */
    readonly value: string,
    readonly reason: string,
  ) {
    super(`${variable}: ${reason}`);
    this.name = 'ProxyEnvError';
  }
}

/**
 * The proxy settings in `env`. Throws a ProxyEnvError naming the variable when a proxy is not a
 * usable URL (Go refuses it at the first request; we refuse it at start).
 */
export function proxySettingsFromEnv(env: Env): ProxySettings {
  const settings = {
    httpProxy: either(env, 'HTTP_PROXY'),
    httpsProxy: either(env, 'HTTPS_PROXY'),
    noProxy: either(env, 'NO_PROXY'),
  };
  for (const [name, value] of [
    ['HTTP_PROXY', settings.httpProxy],
    ['HTTPS_PROXY', settings.httpsProxy],
  ] as const) {
    if (value !== '') proxyUrl(name, value);
  }
  return settings;
}

/** A proxy's URL: http:// when it has no scheme; only http and https proxies. */
function proxyUrl(name: string, value: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  const shown = hideUserInfo(value);
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ProxyEnvError(name, shown, 'not a proxy URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProxyEnvError(
      name,
      shown,
      `${url.protocol}// proxies are not supported (use http:// or https://)`,
    );
  }
  if (url.hostname === '') throw new ProxyEnvError(name, shown, 'names no host');
  return url;
}

/** The proxy settings as log fields. */
export function describeProxy(settings: ProxySettings): Record<string, string> {
  const out: Record<string, string> = {};
  if (settings.httpProxy !== '') out.httpProxy = hideUserInfo(settings.httpProxy);
  if (settings.httpsProxy !== '') out.httpsProxy = hideUserInfo(settings.httpsProxy);
  if (settings.noProxy !== '') out.noProxy = settings.noProxy;
  return out;
}

/** Host without IPv6 brackets, lower case. */
function bare(host: string): string {
  return host.replace(/^\[|\]$/g, '').toLowerCase();
}

function defaultPort(url: URL): string {
  return url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
}

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const family = isIP(host);
  if (family === 4) return host.startsWith('127.');
  return family === 6 && (host === '::1' || host === '0:0:0:0:0:0:0:1');
}

/** One NO_PROXY entry against a target host and port. */
function excludes(entry: string, host: string, port: string): boolean {
  const pattern = entry.trim().toLowerCase();
  if (pattern === '') return false;
  if (pattern === '*') return true;
  const cidr = /^(.+)\/(\d{1,3})$/.exec(pattern);
  if (cidr !== null) return inCidr(host, cidr[1] ?? '', Number(cidr[2]));
  const withPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(pattern);
  if (withPort === null) return matchesHost(bare(pattern), host);
  return withPort[2] === port && matchesHost(bare(withPort[1] ?? ''), host);
}

/** An IP matches itself; a domain itself and its subdomains; `.domain` and `*.domain` subdomains only. */
function matchesHost(pattern: string, host: string): boolean {
  if (isIP(pattern) !== 0) return pattern === host;
  const domain = pattern.startsWith('*.') ? pattern.slice(1) : pattern;
  if (domain.startsWith('.')) return host.endsWith(domain);
  return host === domain || host.endsWith(`.${domain}`);
}

function inCidr(host: string, network: string, bits: number): boolean {
  const family = isIP(host);
  const netFamily = isIP(network);
  if (family === 0 || family !== netFamily) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const list = new BlockList();
  try {
    list.addSubnet(network, bits, type);
  } catch {
    return false;
  }
  return list.check(host, type);
}

/** The proxy to reach `target` through, or undefined for a direct connection. */
export function proxyFor(target: URL, settings: ProxySettings): URL | undefined {
  const value = target.protocol === 'https:' ? settings.httpsProxy : settings.httpProxy;
  if (value === '') return undefined;
  const host = bare(target.hostname);
  if (isLoopback(host)) return undefined;
  const port = defaultPort(target);
  if (settings.noProxy.split(/[\s,]+/).some((entry) => excludes(entry, host, port))) return undefined;
  return proxyUrl(target.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY', value);
}

/** One agent per proxy and target protocol, kept for the process (connections are reused). */
const agents = new Map<string, http.Agent>();

/**
 * The agent that sends a request for `target` through its proxy (a CONNECT tunnel for https,
 * the absolute URL for http), or undefined when it goes direct. The proxy libraries are loaded only
 * when a proxy is used.
 */
export async function proxyAgent(target: URL, settings: ProxySettings): Promise<http.Agent | undefined> {
  const proxy = proxyFor(target, settings);
  if (proxy === undefined) return undefined;
  const key = `${target.protocol}${proxy.href}`;
  const known = agents.get(key);
  if (known !== undefined) return known;
  const agent =
    target.protocol === 'https:'
      ? new (await import('https-proxy-agent')).HttpsProxyAgent(proxy, { keepAlive: true })
      : new (await import('http-proxy-agent')).HttpProxyAgent(proxy, { keepAlive: true });
  agents.set(key, agent);
  return agent;
}
