// The adapter contract against the real kube-apiserver that `npm run test:real-api` started.
import { describe } from '@jest/globals';
import { adapterContract } from '../contract/adapter-contract.js';
import { TestCluster } from '../contract/cluster.js';

describe('the adapter contract on a real kube-apiserver', () => {
  adapterContract(() => Promise.resolve(TestCluster.real()));
});
