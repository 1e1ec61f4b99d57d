// What a failed client-node call tells the test: the Status object the (fake) API server answered.

/** kube-apiserver's metav1.Status, as the tests of the fake API server read it. */
export interface Status {
  kind: string;
  apiVersion: string;
  status: string;
  message: string;
  reason: string;
  code: number;
  details?: {
    name?: string;
    kind?: string;
    group?: string;
    causes?: { reason?: string; message?: string }[];
  };
}

/** The Status body of a failed client-node call (ApiException carries it as JSON text); throws if the call succeeds. */
export async function failure(call: Promise<unknown>): Promise<Status> {
  try {
    await call;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    return (typeof body === 'string' ? JSON.parse(body) : body) as Status;
  }
  throw new Error('expected the call to fail');
}
