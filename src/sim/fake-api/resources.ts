// The resources the fake API server serves, and the stored shape of their objects.
import type { V1ObjectMeta } from '../../kube/kube.js';

/** Resources served, by their plural name in the URL (or, where two groups share a plural, a name of their own). */
export type ResourceName =
  | 'nodes'
  | 'pods'
  | 'daemonsets'
  | 'deployments'
  | 'replicasets'
  | 'poddisruptionbudgets'
  | 'events'
  | 'namespaces'
  | 'leases'
  | 'services'
  | 'persistentvolumeclaims'
  | 'persistentvolumes'
  | 'volumeattachments'
  | 'volumes'
  | 'nodemaintenances'
  | 'nvidianodemaintenances'
  | 'jobs'
  | 'cronjobs'
  | 'configmaps';

/** Any Kubernetes object as JSON (the wire types of src/kube/kube.ts fit this). */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
}

/** Metadata of a stored object: always named, versioned and identified. */
export interface StoredMeta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  [key: string]: unknown;
}

/** An object as the store keeps it: plain JSON with complete metadata. */
export interface StoredObject {
  apiVersion: string;
  kind: string;
  metadata: StoredMeta;
  [key: string]: unknown;
}

/** What the server knows about one resource. */
export interface ResourceDef {
  name: ResourceName;
  plural: string;
  /** API group, '' for the core group. */
  group: string;
  apiVersion: string;
  kind: string;
  namespaced: boolean;
  /** Has a status subresource: writes to the main resource keep the stored status. */
  hasStatus: boolean;
  /** Field selector labels this resource supports besides metadata.name/metadata.namespace. */
  fields: readonly string[];
}

const EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
];

const POD_FIELDS = [
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.schedulerName',
  'spec.serviceAccountName',
  'status.phase',
  'status.podIP',
  'status.nominatedNodeName',
];

const core = { group: '', apiVersion: 'v1', namespaced: true, hasStatus: true } as const;

export const RESOURCES: Record<ResourceName, ResourceDef> = {
  nodes: {
    ...core,
    name: 'nodes',
    plural: 'nodes',
    kind: 'Node',
    namespaced: false,
    fields: ['spec.unschedulable'],
  },
  pods: { ...core, name: 'pods', plural: 'pods', kind: 'Pod', fields: POD_FIELDS },
  daemonsets: {
    ...core,
    name: 'daemonsets',
    plural: 'daemonsets',
    group: 'apps',
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    fields: [],
  },
  deployments: {
    ...core,
    name: 'deployments',
    plural: 'deployments',
    group: 'apps',
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    fields: [],
  },
  replicasets: {
    ...core,
    name: 'replicasets',
    plural: 'replicasets',
    group: 'apps',
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    fields: [],
  },
  poddisruptionbudgets: {
    ...core,
    name: 'poddisruptionbudgets',
    plural: 'poddisruptionbudgets',
    group: 'policy',
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    fields: [],
  },
  events: {
    ...core,
    name: 'events',
    plural: 'events',
    kind: 'Event',
    hasStatus: false,
    fields: EVENT_FIELDS,
  },
  leases: {
    ...core,
    name: 'leases',
    plural: 'leases',
    group: 'coordination.k8s.io',
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    hasStatus: false,
    fields: [],
  },
  services: { ...core, name: 'services', plural: 'services', kind: 'Service', fields: [] },
  persistentvolumeclaims: {
    ...core,
    name: 'persistentvolumeclaims',
    plural: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    fields: [],
  },
  persistentvolumes: {
    ...core,
    name: 'persistentvolumes',
    plural: 'persistentvolumes',
    kind: 'PersistentVolume',
    namespaced: false,
    fields: [],
  },
  // the attach-detach controller's record of a volume attached to a node (kube's storage.k8s.io/v1)
  volumeattachments: {
    ...core,
    name: 'volumeattachments',
    plural: 'volumeattachments',
    group: 'storage.k8s.io',
    apiVersion: 'storage.k8s.io/v1',
    kind: 'VolumeAttachment',
    namespaced: false,
    fields: [],
  },
  // a custom resource, as kube-apiserver serves it once its CRD is installed: Longhorn's Volume, which
  // the --node-check recipes read (docs/storage.md)
  volumes: {
    ...core,
    name: 'volumes',
    plural: 'volumes',
    group: 'longhorn.io',
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    fields: [],
  },
  // other operators' maintenance of a node (issue 56), as served once their CRDs are installed:
  // medik8s' (cluster-scoped) and NVIDIA's maintenance-operator (namespaced), both "nodemaintenances"
  nodemaintenances: {
    ...core,
    name: 'nodemaintenances',
    plural: 'nodemaintenances',
    group: 'nodemaintenance.medik8s.io',
    apiVersion: 'nodemaintenance.medik8s.io/v1beta1',
    kind: 'NodeMaintenance',
    namespaced: false,
    fields: [],
  },
  nvidianodemaintenances: {
    ...core,
    name: 'nvidianodemaintenances',
    plural: 'nodemaintenances',
    group: 'maintenance.nvidia.com',
    apiVersion: 'maintenance.nvidia.com/v1alpha1',
    kind: 'NodeMaintenance',
    fields: [],
  },
  // the hooks' templates (suspended CronJobs) and Jobs (issue 56); no Job controller runs: a test
  // writes a Job's status as it would
  jobs: {
    ...core,
    name: 'jobs',
    plural: 'jobs',
    group: 'batch',
    apiVersion: 'batch/v1',
    kind: 'Job',
    fields: [],
  },
  cronjobs: {
    ...core,
    name: 'cronjobs',
    plural: 'cronjobs',
    group: 'batch',
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    fields: [],
  },
  // what `check` reads of the chart's drain rules (src/cli/deployed-config.ts)
  configmaps: {
    ...core,
    name: 'configmaps',
    plural: 'configmaps',
    kind: 'ConfigMap',
    hasStatus: false,
    fields: [],
  },
  namespaces: {
    ...core,
    name: 'namespaces',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    fields: ['status.phase'],
  },
};
