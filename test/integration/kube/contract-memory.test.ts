// The adapter contract against the fake API server with our client talking to it in memory, as most
// integration tests do (FakeApiServer.kubeInMemory): the in-memory wire keeps the contract that
// contract-fake.test.ts holds over HTTP and test/real-api/contract.test.ts against kube-apiserver.
import { describe } from '@jest/globals';
import { adapterContract } from '../../contract/adapter-contract.js';
import { TestCluster } from '../../contract/cluster.js';

describe('the adapter contract on the fake API server, in memory', () => {
  adapterContract(() => TestCluster.fakeInMemory());
});
