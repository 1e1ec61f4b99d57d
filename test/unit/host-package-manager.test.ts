// The host's package managers as the agent reads them (src/host/host.ts) and the blocker that waits
// for them (src/blockers/package-manager.ts), over a host in memory and a virtual clock.
import { describe, expect, it } from '@jest/globals';
import { PackageManagerBlocker } from '../../src/blockers/package-manager.js';
import { parseProcLocks } from '../../src/host/host.js';
import { hostView } from '../../src/host/host-view.js';
import { readPackageManagers } from '../../src/host/package-managers.js';

const HOST_ROOT = '/host';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakeHost } from '../fakes/fake-host.js';
import { packageManagerHost } from '../../src/cli/check-host.js';

const HOUR = 3_600_000;

function blocker(host: FakeHost, clock = new FakeClock()): PackageManagerBlocker {
  return new PackageManagerBlocker({ host, clock, waitMs: HOUR });
}

describe('reading the host', () => {
  it('finds no package manager on a host without any of their files', async () => {
    expect(await readPackageManagers(new FakeHost())).toEqual({ state: 'none' });
  });

  it('finds dpkg/apt idle when its lock files exist and none is in the lock table', async () => {
    const host = FakeHost.debian();
    host.table = [{ inode: 1, pid: 7 }]; // someone else's lock
    expect(await readPackageManagers(host)).toEqual({ state: 'idle', found: ['dpkg/apt'] });
  });

  it.each([
    ['/var/lib/dpkg/lock-frontend', 'dpkg/apt'],
    ['/var/lib/dpkg/lock', 'dpkg/apt'],
    ['/var/lib/apt/lists/lock', 'dpkg/apt'],
    ['/var/cache/apt/archives/lock', 'dpkg/apt'],
    ['/run/unattended-upgrades.lock', 'unattended-upgrades'],
    ['/var/lib/rpm/.rpm.lock', 'rpm/dnf'],
  ])('finds the package manager at work while %s is locked', async (path, manager) => {
    const host = FakeHost.debian();
    if (!host.files.has(path)) host.file(path);
    host.hold(path, 4242);
    expect(await readPackageManagers(host)).toEqual({
      state: 'busy',
      holder: `${manager} (${path} locked by pid 4242)`,
    });
  });

  it.each([
    ['/run/zypp.pid', 'zypper'],
    ['/var/lib/dnf/rpmdb_lock.pid', 'rpm/dnf'],
  ])(
    'finds the package manager at work while %s names a running process, idle once it has ended',
    async (path, manager) => {
      const host = new FakeHost();
      host.file(path, '515\n');
      host.processes.add(515);
      expect(await readPackageManagers(host)).toEqual({
        state: 'busy',
        holder: `${manager} (${path} names running pid 515)`,
      });
      host.processes.delete(515);
      expect(await readPackageManagers(host)).toEqual({ state: 'idle', found: [manager] });
    },
  );

  it('says unknown, with why, when /proc/locks cannot be read', async () => {
    const host = FakeHost.debian();
    host.table = new Error('EACCES: permission denied');
    expect(await readPackageManagers(host)).toEqual({
      state: 'unknown',
      why: '/proc/locks cannot be read: EACCES: permission denied',
    });
  });

  it('reads the kernel lock table: POSIX, FLOCK, OFD and waiting entries, by inode', () => {
    const text = [
      '1: POSIX  ADVISORY  WRITE 1234 08:01:131090 0 EOF',
      '1: -> POSIX  ADVISORY  WRITE 1300 08:01:131090 0 EOF',
      '2: FLOCK  ADVISORY  WRITE 88 00:19:3312 0 EOF',
      '3: OFDLCK ADVISORY  READ  -1 00:06:9 0 EOF',
      '',
    ].join('\n');
    expect(parseProcLocks(text)).toEqual([
      { inode: 131090, pid: 1234 },
      { inode: 131090, pid: 1300 },
      { inode: 3312, pid: 88 },
      { inode: 9, pid: -1 },
    ]);
  });
});

describe('the package-manager blocker', () => {
  it('does not block on a host without a package manager, nor on an idle one', async () => {
    expect(await blocker(new FakeHost()).check()).toEqual({ blocked: false });
    expect(await blocker(FakeHost.debian()).check()).toEqual({ blocked: false });
  });

  it('blocks while dpkg holds its lock, says so anew past --package-manager-wait, and never lets go while it is held', async () => {
    const host = FakeHost.debian();
    const clock = new FakeClock();
    const b = blocker(host, clock);
    host.hold('/var/lib/dpkg/lock-frontend', 4242);
    expect(await b.check()).toEqual({
      blocked: true,
      reason:
        'package manager at work: dpkg/apt (/var/lib/dpkg/lock-frontend locked by pid 4242); waiting up to 1h00m (--package-manager-wait)',
    });
    await clock.advance(HOUR);
    const past = await b.check();
    expect(past).toMatchObject({ blocked: true });
    expect(past.blocked && past.reason).toContain('at work for over 1h00m (--package-manager-wait)');
    expect(past.blocked && past.reason).toContain('no reboot while it holds its lock');
    await clock.advance(24 * HOUR);
    expect((await b.check()).blocked).toBe(true);
    host.releaseAll();
    expect(await b.check()).toEqual({ blocked: false });
  });

  it('blocks while /proc/locks cannot be read, saying "not checked", for --package-manager-wait only', async () => {
    const host = FakeHost.debian();
    host.table = new Error('EACCES: permission denied');
    const clock = new FakeClock();
    const b = blocker(host, clock);
    const first = await b.check();
    expect(first).toMatchObject({ blocked: true });
    expect(first.blocked && first.reason).toContain(
      'package manager not checked: /proc/locks cannot be read',
    );
    await clock.advance(HOUR - 1);
    expect((await b.check()).blocked).toBe(true);
    await clock.advance(1);
    expect(await b.check()).toEqual({ blocked: false });
  });

  it('blocks without end while /proc/locks cannot be read but a pid file names a running zypper', async () => {
    const host = FakeHost.debian();
    host.table = new Error('EACCES: permission denied');
    host.file('/run/zypp.pid', '99');
    host.processes.add(99);
    const clock = new FakeClock();
    const b = blocker(host, clock);
    await clock.advance(48 * HOUR);
    expect((await b.check()).blocked).toBe(true);
  });

  it('starts its wait again after the host was idle in between', async () => {
    const host = FakeHost.debian();
    const clock = new FakeClock();
    const b = blocker(host, clock);
    host.hold('/var/lib/dpkg/lock', 1);
    await b.check();
    await clock.advance(HOUR);
    host.releaseAll();
    await b.check();
    host.hold('/var/lib/dpkg/lock', 2);
    const again = await b.check();
    expect(again.blocked && again.reason).toContain('waiting up to 1h00m');
  });
});

describe('which host the agent can read', () => {
  const exists = (): boolean => true;

  it('reads the host at / for an agent on the host itself', () => {
    expect('host' in hostView({ rebootMethod: 'signal', hostExec: 'direct', hostRoot: '/' }, exists)).toBe(
      true,
    );
  });

  it(`reads the host through ${HOST_ROOT} for the chart's privileged agent (rebootMethod command)`, () => {
    expect(
      'host' in hostView({ rebootMethod: 'command', hostExec: 'nsenter', hostRoot: HOST_ROOT }, exists),
    ).toBe(true);
  });

  it('does not check with rebootMethod signal (unprivileged, no hostPID), and says so', () => {
    expect(hostView({ rebootMethod: 'signal', hostExec: 'nsenter', hostRoot: HOST_ROOT }, exists)).toEqual({
      notChecked: expect.stringContaining('not checked: rebootMethod signal runs unprivileged') as unknown,
    });
  });

  it("does not read the container's own files for the host (--host-root / in a container), and says so", () => {
    expect(hostView({ rebootMethod: 'command', hostExec: 'nsenter', hostRoot: '/' }, exists)).toEqual({
      notChecked: expect.stringContaining('not mounted at --host-root /') as unknown,
    });
  });

  it(`does not check where nothing is mounted at ${HOST_ROOT} (kured's chart), and says so`, () => {
    expect(
      hostView({ rebootMethod: 'command', hostExec: 'nsenter', hostRoot: HOST_ROOT }, () => false),
    ).toEqual({
      notChecked: expect.stringContaining(`not mounted at --host-root ${HOST_ROOT}`) as unknown,
    });
  });
});

describe('kured-ts check on the package manager', () => {
  const config = {
    rebootMethod: 'command' as const,
    hostExec: 'nsenter' as const,
    hostRoot: HOST_ROOT,
    packageManagerWaitMs: HOUR,
  };

  it('says "not checked" off the node (without --local)', () => {
    const seen = packageManagerHost({ config }, {});
    expect(seen).toMatchObject({ line: { name: 'package-manager', verdict: 'skipped' } });
    expect('line' in seen && seen.line.detail).toMatch(/^not checked: /);
  });

  it('says "not checked" with --local where rebootMethod signal cannot see the host', () => {
    expect(
      packageManagerHost({ config: { ...config, rebootMethod: 'signal' }, local: true }, {}),
    ).toMatchObject({
      line: { verdict: 'skipped', detail: expect.stringContaining('rebootMethod signal') as unknown },
    });
  });

  it("hands the host it can read with --local to the agent's own package-manager blocker", () => {
    const host = FakeHost.debian();
    expect(packageManagerHost({ config, local: true }, { hostView: { host } })).toEqual({ host });
  });
});
