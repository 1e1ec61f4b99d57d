// FileSentinel: a reboot is required while the file exists (Debian/Ubuntu's /var/run/reboot-required).
import { access } from 'node:fs/promises';
import type { Sentinel, SentinelVerdict } from './sentinel.js';

export class FileSentinel implements Sentinel {
  /** @param path --reboot-sentinel, as seen from the agent (the chart mounts the host path read-only). */
  constructor(private readonly path: string) {}

  async rebootRequired(): Promise<SentinelVerdict> {
    try {
      await access(this.path);
      return { required: true };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { required: false };
      // Permission problems and I/O errors are not a "no": they are unknown, reported as such.
      return { required: false, error: `cannot check ${this.path}: ${(err as Error).message}` };
    }
  }
}
