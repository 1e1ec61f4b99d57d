// Probe: client-node's KubeConfig, loaded as the agent loads it (its own module, stubs as in the bundle).
import { loadKubeConfig } from '../../src/kube/kubeconfig.js';
import { reportRss } from './rss.js';

reportRss(loadKubeConfig({ url: 'http://127.0.0.1:1' }));
