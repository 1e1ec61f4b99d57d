import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { FsHostFiles, type FileLock, type HostFiles } from '../../src/host/host.js';
import {
  inhibitDelayMaxMs,
  kubeletDuration,
  readShutdown,
  shutdownMeaning,
  systemdSpanMs,
} from '../../src/host/shutdown.js';

/** The host's files in memory (configuration files only: no locks, no processes). */
class FakeHostFiles implements HostFiles {
  constructor(private readonly files: Record<string, string>) {}
  read(path: string): Promise<string | undefined> {
    return Promise.resolve(this.files[path]);
  }
  list(dir: string): Promise<string[]> {
    return Promise.resolve(
      Object.keys(this.files)
        .filter((p) => p.startsWith(`${dir}/`))
        .map((p) => p.slice(dir.length + 1)),
    );
  }
  inode(): Promise<number | undefined> {
    return Promise.resolve(undefined);
  }
  locks(): Promise<FileLock[]> {
    return Promise.resolve([]);
  }
  running(): Promise<boolean> {
    return Promise.resolve(false);
  }
}

const KUBELET = '/var/lib/kubelet/config.yaml';
const LOGIND = '/etc/systemd/logind.conf';

describe('graceful node shutdown as read on the host', () => {
  it('reads shutdownGracePeriod from a YAML kubelet configuration and InhibitDelayMaxSec from the kubelet drop-in', async () => {
    const files = new FakeHostFiles({
      [KUBELET]:
        'kind: KubeletConfiguration\nshutdownGracePeriod: 2m\nshutdownGracePeriodCriticalPods: 30s\n',
      [LOGIND]: '[Login]\n#InhibitDelayMaxSec=5\n',
      '/etc/systemd/logind.conf.d/99-kubelet.conf': '[Login]\nInhibitDelayMaxSec=120\n',
    });
    const s = await readShutdown(files, KUBELET);
    expect(s).toEqual({ gracePeriod: '2m0s', criticalPods: '30s', inhibitDelayMax: '2m0s' });
    expect(shutdownMeaning(s)).toEqual({
      level: 'ok',
      meaning:
        'at the reboot the kubelet gives the pods the drain leaves 2m0s (30s of it for critical pods); logind waits up to 2m0s',
    });
  });

  it('reads a JSON kubelet configuration (EKS) without mistaking shutdownGracePeriodCriticalPods for it', () => {
    const json =
      '{"kind":"KubeletConfiguration","shutdownGracePeriodCriticalPods":"10s","shutdownGracePeriod":"45s"}';
    expect(kubeletDuration(json, 'shutdownGracePeriod')).toBe(45_000);
    expect(kubeletDuration(json, 'shutdownGracePeriodCriticalPods')).toBe(10_000);
  });

  it('says graceful node shutdown is off when the kubelet does not set it', async () => {
    const s = await readShutdown(
      new FakeHostFiles({ [KUBELET]: 'kind: KubeletConfiguration\n', [LOGIND]: '' }),
      KUBELET,
    );
    expect(s).toEqual({ gracePeriod: '0s', criticalPods: '0s', inhibitDelayMax: '5s' });
    expect(shutdownMeaning(s).level).toBe('warn');
    expect(shutdownMeaning(s).meaning).toMatch(
      /graceful node shutdown off.*killed without their grace period/,
    );
  });

  it("warns when logind's InhibitDelayMaxSec cuts the kubelet's grace period short", async () => {
    const files = new FakeHostFiles({ [KUBELET]: 'shutdownGracePeriod: 30s\n', [LOGIND]: '[Login]\n' });
    const s = await readShutdown(files, KUBELET);
    expect(shutdownMeaning(s)).toEqual({
      level: 'warn',
      meaning:
        'kubelet shutdownGracePeriod 30s but logind InhibitDelayMaxSec 5s: logind waits only 5s, then the pods the drain leaves are killed',
    });
  });

  it('says where a file cannot be read, and what that leaves unknown', async () => {
    const s = await readShutdown(new FakeHostFiles({}), KUBELET);
    expect(s).toEqual({
      kubeletError:
        "/var/lib/kubelet/config.yaml: ENOENT: no such file or directory, open '/var/lib/kubelet/config.yaml'",
      logindError:
        "/etc/systemd/logind.conf: ENOENT: no such file or directory, open '/etc/systemd/logind.conf'",
    });
    expect(shutdownMeaning(s)).toMatchObject({ level: 'unknown' });
    expect(await readShutdown(new FakeHostFiles({ [LOGIND]: '' }), '')).toEqual({
      kubeletError: 'not read (--kubelet-config is empty)',
      inhibitDelayMax: '5s',
    });
  });

  it('reads systemd time spans and the last setting of the [Login] section', () => {
    expect(systemdSpanMs('30')).toBe(30_000);
    expect(systemdSpanMs('1min 30s')).toBe(90_000);
    expect(systemdSpanMs('soon')).toBeNull();
    expect(inhibitDelayMaxMs(['[Login]\nInhibitDelayMaxSec=10\n', '[Other]\nInhibitDelayMaxSec=99\n'])).toBe(
      10_000,
    );
    expect(inhibitDelayMaxMs(['[Login]\nInhibitDelayMaxSec=10\n', '[Login]\nInhibitDelayMaxSec=20s\n'])).toBe(
      20_000,
    );
  });

  it('reads the files under --host-root, as the chart mounts them', async () => {
    const root = await mkdtemp(join(tmpdir(), 'kured-ts-host-'));
    await mkdir(join(root, 'etc/systemd/logind.conf.d'), { recursive: true });
    await mkdir(join(root, 'var/lib/kubelet'), { recursive: true });
    await writeFile(join(root, 'etc/systemd/logind.conf'), '[Login]\n');
    await writeFile(
      join(root, 'etc/systemd/logind.conf.d/99-kubelet.conf'),
      '[Login]\nInhibitDelayMaxSec=60\n',
    );
    await writeFile(join(root, KUBELET), 'shutdownGracePeriod: 60s\n');
    expect(await readShutdown(new FsHostFiles(root), KUBELET)).toEqual({
      gracePeriod: '1m0s',
      criticalPods: '0s',
      inhibitDelayMax: '1m0s',
    });
  });
});
