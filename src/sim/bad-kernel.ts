// simulate --bad-kernel N: the N-th node to reboot comes back with a new boot ID and its kubelet
// never says Ready again (a kernel that boots but breaks the node), to see how far a wave lets it spread.
import { readyCondition } from './cluster-objects.js';

export class BadKernel {
  /** The nodes in the order their first reboot was requested. */
  readonly order: string[] = [];

  /** `nth`: the reboot that brings the bad kernel (1 = the first); 0 = none. */
  constructor(private readonly nth: number) {}

  /** `name`'s reboot was requested. */
  rebooting(name: string): void {
    if (!this.order.includes(name)) this.order.push(name);
  }

  /** The node whose reboot brings the bad kernel, once it is known. */
  get node(): string | undefined {
    return this.nth > 0 ? this.order[this.nth - 1] : undefined;
  }

  /** The Ready condition `name`'s kubelet reports once booted at `at`: not Ready with the bad kernel. */
  kubeletReady(name: string, at: string): ReturnType<typeof readyCondition> {
    const bad = this.node === name;
    return readyCondition(!bad, at, bad ? 'KubeletNotReady' : 'KubeletReady');
  }
}
