// SignalRebooter: sends --reboot-signal to PID 1 (systemd reboots on SIGRTMIN+5); needs hostPID and CAP_KILL.
import type { Rebooter } from './rebooter.js';
import { errorText } from '../text/error-text.js';

/** process.kill's shape; injectable so tests do not signal anything real. */
export type KillFn = (pid: number, signal: number) => void;

export class SignalRebooter implements Rebooter {
  /**
   * @param signalNumber --reboot-signal, default 39 (SIGRTMIN+5).
   * @param kill default process.kill.
   */
  constructor(
    private readonly signalNumber: number,
    private readonly kill: KillFn = (pid, sig) => process.kill(pid, sig),
  ) {}

  reboot(): Promise<void> {
    try {
      this.kill(1, this.signalNumber);
      return Promise.resolve();
    } catch (err) {
      const text = errorText(err);
      return Promise.reject(
        new Error(`cannot send signal ${this.signalNumber} to PID 1: ${text}`, { cause: err }),
      );
    }
  }
}
