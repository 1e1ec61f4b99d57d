// The simulator's invariants, as the observer (observer.ts) reports one broken.

/** One broken invariant, when and where. */
export interface Violation {
  /** Virtual ms since the start. */
  atMs: number;
  node: string;
  rule:
    | 'too-many-holders'
    | 'cordoned-without-lock'
    | 'reboot-without-lock'
    | 'reboot-not-cordoned'
    | 'reboot-undrained'
    | 'uncordoned-before-boot'
    | 'pre-cordoned-uncordoned'
    | 'left-cordoned'
    | 'taint-left'
    | 'lock-left'
    | 'too-many-down'
    | 'too-many-in-group'
    | 'unavailable-exceeded'
    | 'other-operator-exceeded'
    | 'write-denied-by-policy'
    | 'control-plane-concurrent'
    | 'control-plane-without-quorum'
    | 'control-plane-before-workers'
    | 'removed-by-autoscaler'
    | 'drain-order'
    | 'rebooted-while-held'
    | 'hold-lost';
  detail: string;
}
