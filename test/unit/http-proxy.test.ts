// HTTP(S)_PROXY and NO_PROXY as Go's net/http reads them (kured's behaviour), decided per target URL.
import { describe, expect, it } from '@jest/globals';
import { describeProxy, proxyFor, proxySettingsFromEnv } from '../../src/http/proxy.js';

const PROXY = { httpProxy: 'http://proxy.corp:3128', httpsProxy: 'http://proxy.corp:3128', noProxy: '' };

describe('which requests go through the proxy', () => {
  it.each([
    ['an https target goes through HTTPS_PROXY', 'https://hooks.slack.com/x', '', true],
    ['an http target goes through HTTP_PROXY', 'http://prometheus.monitoring:9090/', '', true],
    ['localhost never does', 'http://localhost:9090/', '', false],
    ['a loopback address never does', 'http://127.0.0.1:9090/', '', false],
    ['IPv6 loopback never does', 'http://[::1]:9090/', '', false],
    ['NO_PROXY * turns it off', 'https://hooks.slack.com/x', '*', false],
    ['a domain in NO_PROXY covers itself', 'http://svc.cluster.local/', 'cluster.local', false],
    [
      'a domain in NO_PROXY covers its subdomains',
      'http://prometheus.monitoring.svc.cluster.local:9090/',
      'cluster.local',
      false,
    ],
    ['a leading dot covers subdomains only', 'http://cluster.local/', '.cluster.local', true],
    ['*.domain is .domain', 'http://a.cluster.local/', '*.cluster.local', false],
    [
      'a domain does not cover a longer name ending like it',
      'http://notcluster.local/',
      'cluster.local',
      true,
    ],
    ['an IP matches itself', 'http://10.0.0.5:9090/', '10.0.0.5', false],
    ['a CIDR range matches the addresses in it', 'http://10.96.12.7:9090/', '10.96.0.0/12', false],
    ['a CIDR range does not match a name', 'http://prometheus:9090/', '10.96.0.0/12', true],
    ['a host with a port matches only that port', 'http://prometheus:9090/', 'prometheus:9091', true],
    ['a host with the default port matches', 'https://hooks.slack.com/x', 'hooks.slack.com:443', false],
    [
      'entries are separated by commas and spaces, case-insensitive',
      'https://HOOKS.slack.com/x',
      'a.b, Hooks.Slack.com',
      false,
    ],
  ])('%s', (_name, target, noProxy, proxied) => {
    expect(proxyFor(new URL(target), { ...PROXY, noProxy }) !== undefined).toBe(proxied);
  });

  it('uses the proxy of the target scheme only', () => {
    const onlyHttps = { httpProxy: '', httpsProxy: 'proxy.corp:3128', noProxy: '' };
    expect(proxyFor(new URL('http://a.example/'), onlyHttps)).toBeUndefined();
    expect(proxyFor(new URL('https://a.example/'), onlyHttps)?.href).toBe('http://proxy.corp:3128/');
  });
});

describe('reading the environment', () => {
  it.each([
    [
      'upper case wins over lower case',
      { HTTPS_PROXY: 'http://a:1', https_proxy: 'http://b:1' },
      'http://a:1',
    ],
    ['lower case alone is read', { https_proxy: 'http://b:1' }, 'http://b:1'],
    [
      'an empty upper case value falls back to lower case',
      { HTTPS_PROXY: '', https_proxy: 'http://b:1' },
      'http://b:1',
    ],
    ['nothing set is no proxy', {}, ''],
  ])('%s', (_name, env, httpsProxy) => {
    expect(proxySettingsFromEnv(env).httpsProxy).toBe(httpsProxy);
  });

  it('logs a proxy without its password', () => {
    expect(
      describeProxy({ httpProxy: 'http://user:s3cret@proxy:3128', httpsProxy: '', noProxy: '.svc' }),
    ).toEqual({ httpProxy: 'http://<redacted>@proxy:3128', noProxy: '.svc' });
  });
});
