// A rebooter: makes the host reboot. It returns once the request is made; the host goes down later.

export interface Rebooter {
  /** Throws when the reboot could not be requested (command failed, signal refused). */
  reboot(signal?: AbortSignal): Promise<void>;
}
