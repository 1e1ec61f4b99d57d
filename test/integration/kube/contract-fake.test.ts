// The adapter contract against the fake API server; test/real-api/contract.test.ts runs the same
// cases against a real kube-apiserver.
import { describe } from '@jest/globals';
import { adapterContract } from '../../contract/adapter-contract.js';
import { TestCluster } from '../../contract/cluster.js';

describe('the adapter contract on the fake API server', () => {
  adapterContract(() => TestCluster.fake());
});
