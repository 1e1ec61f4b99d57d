// `npm test`'s first step: the Debian packages the tests run for real, installed with apt-get when
// they are missing and this user may (root, or password-less sudo). Otherwise one line says what to
// install and the test command stops: the tests that need them are never skipped or faked.
//
//   prometheus               the alert blocker tests start a real Prometheus; promtool lints /metrics
//   prometheus-alertmanager  the silence tests start a real Alertmanager
//   chromium-headless-shell  the simulate --timeline test renders the SVG to a PNG
//
// `npm run test:vm` (scripts/test-vm.mjs) installs its own packages (QEMU, debootstrap) through
// ensureDebianPackages below; it skips with that reason where they cannot be installed.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Debian package -> the files the tests run. */
const PACKAGES = {
  prometheus: ['/usr/bin/prometheus', '/usr/bin/promtool'],
  'prometheus-alertmanager': ['/usr/bin/prometheus-alertmanager'],
  'chromium-headless-shell': ['/usr/bin/chromium-headless-shell'],
};

/**
 * Installs the packages (Debian package -> the files it must provide) whose files are missing.
 * Resolves to undefined when all are there, else to one line saying why they are not.
 */
export function ensureDebianPackages(packages, log = (line) => process.stderr.write(`${line}\n`)) {
  const missing = Object.entries(packages)
    .filter(([, files]) => files.some((f) => !existsSync(f)))
    .map(([pkg]) => pkg);
  if (missing.length === 0) return undefined;

  const list = missing.join(' ');
  const isRoot = process.getuid?.() === 0;
  const sudoOk = !isRoot && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  const hasApt = existsSync('/usr/bin/apt-get');
  if (!hasApt || (!isRoot && !sudoOk)) {
    const why = !hasApt ? 'no apt-get on this machine' : 'not root and no password-less sudo';
    return `the Debian packages ${list} are missing (${why}): run "sudo apt-get install -y ${list}"`;
  }

  const run = (args) => {
    const cmd = isRoot ? args : ['sudo', '-n', ...args];
    execFileSync(cmd[0], cmd.slice(1), {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  };
  // Another apt (unattended-upgrades on a fresh machine, a CI step beside us) may hold the dpkg lock:
  // apt-get waits for it, up to five minutes, instead of failing at once.
  const LOCK_WAIT_S = 300;
  const waitForLock = ['-o', `DPkg::Lock::Timeout=${LOCK_WAIT_S}`];
  log(
    `installing the Debian packages the tests run: ${list} (waiting up to ${LOCK_WAIT_S} s for another apt to finish)`,
  );
  try {
    run(['apt-get', ...waitForLock, 'update', '-qq']);
    run(['apt-get', ...waitForLock, 'install', '-y', '-qq', '--no-install-recommends', ...missing]);
  } catch (err) {
    return `could not install ${list} with apt-get: ${err.message.split('\n')[0]}`;
  }
  const still = missing.filter((pkg) => packages[pkg].some((f) => !existsSync(f)));
  if (still.length > 0) return `apt-get ran but ${still.join(' ')} is still missing; install it by hand`;
  return undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const why = ensureDebianPackages(PACKAGES);
  if (why !== undefined) {
    process.stderr.write(`npm test: ${why} and try again\n`);
    process.exit(1);
  }
}
