// `npm test`'s first step: the Debian packages the tests run for real, installed with apt-get when
// they are missing and this user may (root, or password-less sudo). Otherwise one line says what to
// install and the test command stops: the tests that need them are never skipped or faked.
//
//   prometheus               the alert blocker tests start a real Prometheus; promtool lints /metrics
//   chromium-headless-shell  the simulate --timeline test renders the SVG to a PNG
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Debian package -> the files the tests run. */
const PACKAGES = {
  prometheus: ['/usr/bin/prometheus', '/usr/bin/promtool'],
  'chromium-headless-shell': ['/usr/bin/chromium-headless-shell'],
};

const missing = Object.entries(PACKAGES)
  .filter(([, files]) => files.some((f) => !existsSync(f)))
  .map(([pkg]) => pkg);
if (missing.length === 0) process.exit(0);

const list = missing.join(' ');
const isRoot = process.getuid?.() === 0;
const sudoOk = !isRoot && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
const hasApt = existsSync('/usr/bin/apt-get');
if (!hasApt || (!isRoot && !sudoOk)) {
  const why = !hasApt ? 'no apt-get on this machine' : 'not root and no password-less sudo';
  process.stderr.write(
    `npm test needs the Debian packages ${list} (${why}): run "sudo apt-get install -y ${list}" and try again\n`,
  );
  process.exit(1);
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
process.stderr.write(
  `installing the Debian packages the tests run: ${list} (waiting up to ${LOCK_WAIT_S} s for another apt to finish)\n`,
);
try {
  run(['apt-get', ...waitForLock, 'update', '-qq']);
  run(['apt-get', ...waitForLock, 'install', '-y', '-qq', '--no-install-recommends', ...missing]);
} catch (err) {
  process.stderr.write(`npm test could not install ${list} with apt-get: ${err.message.split('\n')[0]}\n`);
  process.exit(1);
}
const still = missing.filter((pkg) => PACKAGES[pkg].some((f) => !existsSync(f)));
if (still.length > 0) {
  process.stderr.write(`apt-get ran but ${still.join(' ')} is still missing; install it by hand\n`);
  process.exit(1);
}
