// The cluster `npm run bench:real` reboots: the lock's DaemonSet, RBAC for the identities the agents
// and coordinators act as, and N Node objects the size of a cloud node's (about 10 KB as JSON: 30
// images with two names each, the five usual conditions, nodeInfo, capacity), Ready, their status set
// through the /status subresource as a kubelet sets it (the server ignores status on create).
import { TABLE_ACCEPT } from '../src/kube/http.js';
import type { AdminClient } from './real-api-admin.js';

export const NS = 'kube-system';
export const DS_NAME = 'kured';
export const LOCK_ANNOTATION = 'weave.works/kured-node-lock';
/** The ServiceAccounts the agents and coordinators act as (impersonated; bound to cluster-admin). */
export const AGENT_USER = `system:serviceaccount:${NS}:kured-ts`;
export const COORDINATOR_USER = `system:serviceaccount:${NS}:kured-ts-coordinator`;

const ZONES = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'];
const IMAGES = [
  'registry.k8s.io/kube-proxy',
  'docker.io/calico/node',
  'docker.io/calico/cni',
  'registry.k8s.io/coredns/coredns',
  'quay.io/prometheus/node-exporter',
  'docker.io/fluent/fluent-bit',
  'registry.k8s.io/pause',
  'public.ecr.aws/eks/aws-ebs-csi-driver',
  'registry.k8s.io/sig-storage/csi-node-driver-registrar',
  'registry.k8s.io/sig-storage/livenessprobe',
  'quay.io/cilium/cilium',
  'ghcr.io/kured-ts/kured-ts',
  'docker.io/library/nginx',
  'docker.io/library/redis',
  'docker.io/bitnami/postgresql',
  'quay.io/jetstack/cert-manager-controller',
  'registry.k8s.io/ingress-nginx/controller',
  'docker.io/grafana/grafana',
  'quay.io/prometheus/prometheus',
  'docker.io/istio/proxyv2',
  'gcr.io/datadoghq/agent',
  'docker.io/envoyproxy/envoy',
  'registry.k8s.io/metrics-server/metrics-server',
  'docker.io/library/busybox',
  'quay.io/argoproj/argocd',
  'docker.io/jaegertracing/all-in-one',
  'docker.io/library/python',
  'docker.io/library/node',
  'docker.io/openpolicyagent/gatekeeper',
  'public.ecr.aws/aws-observability/aws-for-fluent-bit',
];

/** A stable pseudo-random hex string of `length` for `seed` (image digests, IDs). */
function hex(seed: string, length: number): string {
  let h = 2166136261;
  let out = '';
  while (out.length < length) {
    for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619) >>> 0;
    h = Math.imul(h ^ out.length, 16777619) >>> 0;
    out += h.toString(16).padStart(8, '0');
  }
  return out.slice(0, length);
}

/** The name of node `i` (0-based), as EC2 names them. */
export function nodeName(i: number): string {
  return `ip-10-${Math.floor(i / 65536) % 256}-${Math.floor(i / 256) % 256}-${i % 256}.eu-west-1.compute.internal`;
}

/** The Node as created: metadata and spec (status goes through /status). */
function nodeObject(i: number): Record<string, unknown> {
  const name = nodeName(i);
  const zone = ZONES[i % ZONES.length] ?? 'eu-west-1a';
  const instance = `i-0${hex(name, 16)}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/instance-type': 'm5.xlarge',
        'beta.kubernetes.io/os': 'linux',
        'eks.amazonaws.com/capacityType': 'ON_DEMAND',
        'eks.amazonaws.com/nodegroup': `workers-${zone}`,
        'eks.amazonaws.com/nodegroup-image': 'ami-0c2b8ca1dad447f8a',
        'failure-domain.beta.kubernetes.io/region': 'eu-west-1',
        'failure-domain.beta.kubernetes.io/zone': zone,
        'k8s.io/cloud-provider-aws': hex('cluster', 32),
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm5.xlarge',
        'topology.ebs.csi.aws.com/zone': zone,
        'topology.kubernetes.io/region': 'eu-west-1',
        'topology.kubernetes.io/zone': zone,
      },
      annotations: {
        'alpha.kubernetes.io/provided-node-ip': `10.0.${Math.floor(i / 256) % 256}.${i % 256}`,
        'csi.volume.kubernetes.io/nodeid': JSON.stringify({ 'ebs.csi.aws.com': instance }),
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: {
      providerID: `aws:///${zone}/${instance}`,
      podCIDR: `100.${64 + (Math.floor(i / 256) % 64)}.${i % 256}.0/24`,
      podCIDRs: [`100.${64 + (Math.floor(i / 256) % 64)}.${i % 256}.0/24`],
    },
  };
}

/** A node condition [type, status, reason, message] as the kubelet posts it at `now`. */
function condition(
  [type, status, reason, message]: readonly [string, string, string, string],
  now: string,
): object {
  return { type, status, lastHeartbeatTime: now, lastTransitionTime: now, reason, message };
}

/** The node's status as its kubelet reports it after booting as `bootID`, Ready. */
export function nodeStatus(i: number, bootID: string, now: Date): Record<string, unknown> {
  const t = now.toISOString().replace(/\.\d+Z$/, 'Z');
  const name = nodeName(i);
  const resources = {
    'attachable-volumes-aws-ebs': '25',
    cpu: '4',
    'ephemeral-storage': '83873772Ki',
    'hugepages-1Gi': '0',
    'hugepages-2Mi': '0',
    memory: '16069568Ki',
    pods: '58',
  };
  return {
    capacity: resources,
    allocatable: { ...resources, cpu: '3920m', 'ephemeral-storage': '76224326324', memory: '15052736Ki' },
    conditions: [
      condition(['NetworkUnavailable', 'False', 'RouteCreated', 'RouteController created a route'], t),
      condition(
        ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
        t,
      ),
      condition(['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'], t),
      condition(
        ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
        t,
      ),
      condition(['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'], t),
    ],
    addresses: [
      { type: 'InternalIP', address: `10.0.${Math.floor(i / 256) % 256}.${i % 256}` },
      { type: 'Hostname', address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: {
      machineID: hex(`${name}/machine`, 32),
      systemUUID: `ec2${hex(`${name}/uuid`, 5)}-${hex(`${name}/u2`, 4)}-${hex(`${name}/u3`, 4)}-${hex(`${name}/u4`, 4)}-${hex(`${name}/u5`, 12)}`,
      bootID,
      kernelVersion: '5.10.228-219.884.amzn2.x86_64',
      osImage: 'Amazon Linux 2',
      containerRuntimeVersion: 'containerd://1.7.23',
      kubeletVersion: 'v1.32.0-eks-aeac579',
      kubeProxyVersion: 'v1.32.0-eks-aeac579',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    images: IMAGES.map((repo, k) => {
      const tag = `v1.${k}.${i % 7}`;
      return {
        names: [`${repo}@sha256:${hex(`${repo}/${k}`, 64)}`, `${repo}:${tag}`],
        sizeBytes: 10_000_000 + ((k * 7_919_113) % 400_000_000),
      };
    }),
  };
}

/** A boot ID as a kubelet reports it (a UUID), distinct per node and boot. */
export function bootId(i: number, boot: number): string {
  const h = hex(`${nodeName(i)}#${boot}`, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Runs `work` for 0..n-1 with at most `parallel` at once. */
async function each(n: number, parallel: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, n) }, worker));
}

/** The lock's DaemonSet (minimal but valid), and cluster-admin for the impersonated identities. */
async function setUpLockAndRbac(admin: AdminClient): Promise<void> {
  await admin.json({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: NS } } }, [409]);
  await createDaemonSet(admin, DS_NAME, { 'app.kubernetes.io/name': 'kured-ts' });
  const subjects = [AGENT_USER, COORDINATOR_USER].map((u) => ({
    kind: 'ServiceAccount',
    name: u.split(':').at(-1),
    namespace: NS,
  }));
  await admin.json({
    method: 'POST',
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    body: {
      metadata: { name: 'kured-ts-bench' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects,
    },
  });
}

/**
 * A DaemonSet besides the lock's, created once the server has run a while: kube-apiserver sends no
 * bookmark on the watches of a resource whose watch cache has seen no event since it started (its
 * first list held the lock's DaemonSet), and a real cluster's DaemonSets change all the time.
 * Without it, every agent's quiet watch of the lock fell silent at 90 s and was read again.
 */
async function otherDaemonSet(admin: AdminClient): Promise<void> {
  await createDaemonSet(admin, 'kube-proxy', { 'k8s-app': 'kube-proxy' });
}

/** A minimal but valid DaemonSet `name` in NS, its pods labelled `labels`. */
async function createDaemonSet(
  admin: AdminClient,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await admin.json({
    method: 'POST',
    path: `/apis/apps/v1/namespaces/${NS}/daemonsets`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace: NS },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name, image: name }] } },
      },
    },
  });
}

/** Creates the lock's DaemonSet and `n` Ready nodes booted as bootId(i, 1); returns a node's JSON size. */
export async function setUpCluster(admin: AdminClient, n: number, now: () => Date): Promise<number> {
  await setUpLockAndRbac(admin);
  await each(n, 16, async (i) => {
    await admin.json({ method: 'POST', path: '/api/v1/nodes', body: nodeObject(i) });
    await admin.json({
      method: 'PATCH',
      path: `/api/v1/nodes/${nodeName(i)}/status`,
      contentType: 'application/merge-patch+json',
      body: { status: nodeStatus(i, bootId(i, 1), now()) },
    });
  });
  await otherDaemonSet(admin);
  const sample = await admin.send({ method: 'GET', path: `/api/v1/nodes/${nodeName(0)}` });
  return Buffer.byteLength(sample.text);
}

/** The size of an answer as sent, plain and gzip (as the agents' client asks for it). */
export interface AnswerSize {
  bytes: number;
  gzipBytes: number;
}

/**
 * The fleet census's answer (every Node's printed row, as the agents read it: a Table with
 * includeObject=None) and the whole list of the Nodes, each plain and gzip-compressed as the server
 * sends them: the figures docs/advisor.md quotes for the census's shape.
 */
export async function answerSizes(admin: AdminClient): Promise<{ census: AnswerSize; list: AnswerSize }> {
  const size = async (path: string, accept?: string): Promise<AnswerSize> => {
    const plain = await admin.send({ method: 'GET', path, ...(accept === undefined ? {} : { accept }) });
    const zipped = await admin.send({
      method: 'GET',
      path,
      gzip: true,
      ...(accept === undefined ? {} : { accept }),
    });
    return { bytes: plain.bytes, gzipBytes: zipped.bytes };
  };
  return {
    census: await size('/api/v1/nodes?includeObject=None', TABLE_ACCEPT),
    list: await size('/api/v1/nodes'),
  };
}
