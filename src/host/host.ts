// The node's host as the agent reads it: a few configuration files, read-only (the chart mounts
// them with read-only hostPath volumes under --host-root). Nothing here writes to the host.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Reads one text file of the host. */
export interface HostFiles {
  /** The file's text (at most HOST_FILE_MAX_BYTES); rejects when it cannot be read (ENOENT, EACCES, too big). */
  readText(path: string): Promise<string>;
  /** The names in a directory of the host; [] when there is none. */
  list(dir: string): Promise<string[]>;
}

/** A configuration file larger than this is not one we read. */
const HOST_FILE_MAX_BYTES = 256 * 1024;

/** The host's files as seen under `root` (the agent's --host-root; "/" when it runs on the host itself). */
export class FsHostFiles implements HostFiles {
  constructor(private readonly root: string) {}

  async readText(path: string): Promise<string> {
    const data = await readFile(join(this.root, path));
    if (data.length > HOST_FILE_MAX_BYTES)
      throw new Error(`${path}: larger than ${HOST_FILE_MAX_BYTES} bytes`);
    return data.toString('utf8');
  }

  async list(dir: string): Promise<string[]> {
    try {
      return await readdir(join(this.root, dir));
    } catch {
      return [];
    }
  }
}
