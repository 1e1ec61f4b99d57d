// Just enough discovery (/version, /api, /apis, resource lists) for clients that ask.
import { RESOURCES } from './resources.js';

function resourceList(apiVersion: string): unknown {
  const resources = Object.values(RESOURCES)
    .filter((d) => d.apiVersion === apiVersion)
    .map((d) => ({
      name: d.plural,
      singularName: d.kind.toLowerCase(),
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    }));
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersion, resources };
}

function group(name: string): unknown {
  const version = { groupVersion: `${name}/v1`, version: 'v1' };
  return { name, versions: [version], preferredVersion: version };
}

/** The discovery document at `pathname`, or undefined. */
export function discovery(pathname: string): unknown {
  switch (pathname.replace(/\/+$/, '')) {
    case '/version':
      return {
        major: '1',
        minor: '31',
        gitVersion: 'v1.31.0-kured-ts-fake',
        platform: 'linux/amd64',
        goVersion: 'go1.22.0',
        compiler: 'gc',
      };
    case '/api':
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
    case '/apis':
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('apps'), group('policy')] };
    case '/api/v1':
      return resourceList('v1');
    case '/apis/apps/v1':
      return resourceList('apps/v1');
    case '/apis/policy/v1':
      return resourceList('policy/v1');
    default:
      return undefined;
  }
}
