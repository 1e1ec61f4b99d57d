// Probe: the agent's whole API client (KubeConfig, keep-alive agents, requests with deadlines).
import { connectKube } from '../../src/kube/client.js';
import { reportRss } from './rss.js';

reportRss(connectKube({ url: 'http://127.0.0.1:1' }));
