// Graceful node shutdown on this host: what happens at the reboot to the pods the drain leaves on the
// node (DaemonSet pods, skipped pods). The kubelet delays the shutdown by its shutdownGracePeriod
// (kubelet configuration file; unset = 0 = graceful node shutdown off: those pods are killed hard),
// through a logind inhibitor lock that logind honours for at most InhibitDelayMaxSec (logind.conf
// and its drop-ins; systemd's default 5s; the kubelet writes a drop-in raising it when it can). Read
// once at the agent's start, published in its status, shown by `kured-ts check --node`.
import { goDuration } from '../text/duration.js';
import { errorText } from '../text/error-text.js';
import type { HostFiles } from './host.js';

/** What the agent read; each field absent where it could not be read, with the reason instead. */
export interface ShutdownSettings {
  /** kubelet's shutdownGracePeriod as a Go duration ('0s' when the file does not set it). */
  gracePeriod?: string;
  /** kubelet's shutdownGracePeriodCriticalPods ('0s' when unset). */
  criticalPods?: string;
  /** Why the kubelet configuration could not be read. */
  kubeletError?: string;
  /** logind's InhibitDelayMaxSec as a Go duration (systemd's default '5s' when no file sets it). */
  inhibitDelayMax?: string;
  /** Why logind's configuration could not be read. */
  logindError?: string;
}

/** logind's configuration files, in the order they apply (later wins): the file, then drop-ins. */
const LOGIND_CONF = '/etc/systemd/logind.conf';
const LOGIND_DROP_IN_DIRS = [
  '/usr/lib/systemd/logind.conf.d',
  '/run/systemd/logind.conf.d',
  '/etc/systemd/logind.conf.d',
];
/** systemd's InhibitDelayMaxSec when nothing sets it. */
const LOGIND_DEFAULT_MS = 5000;
/** Errors carried into the status are cut to this. */
const ERROR_MAX = 200;

const bounded = (text: string): string =>
  text.length <= ERROR_MAX ? text : `${text.slice(0, ERROR_MAX - 1)}…`;

/** The text of the host's `path`; rejects, as the file system says it, when there is none. */
async function readText(files: HostFiles, path: string): Promise<string> {
  const text = await files.read(path);
  if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
  return text;
}

/** Reads both at start; never rejects (what cannot be read says why). `kubeletConfig` '' = not read. */
export async function readShutdown(files: HostFiles, kubeletConfig: string): Promise<ShutdownSettings> {
  return { ...(await readKubelet(files, kubeletConfig)), ...(await readLogind(files)) };
}

async function readKubelet(files: HostFiles, path: string): Promise<ShutdownSettings> {
  if (path === '') return { kubeletError: 'not read (--kubelet-config is empty)' };
  let text: string;
  try {
    text = await readText(files, path);
  } catch (err) {
    return { kubeletError: bounded(`${path}: ${errorText(err)}`) };
  }
  const grace = kubeletDuration(text, 'shutdownGracePeriod');
  const critical = kubeletDuration(text, 'shutdownGracePeriodCriticalPods');
  if (grace === null || critical === null) return { kubeletError: bounded(`${path}: not a duration`) };
  return { gracePeriod: goDuration(grace), criticalPods: goDuration(critical) };
}

/**
 * A top-level duration field of a KubeletConfiguration in YAML or JSON (`key: 30s`, `"key": "30s"`):
 * its ms, 0 when absent, null when not a duration.
 */
export function kubeletDuration(text: string, key: string): number | null {
  const match = new RegExp(`(?:^|[\\s{,])"?${key}"?\\s*:\\s*["']?([^"',\\s}#]*)`, 'm').exec(text);
  if (match === null) return 0;
  return goDurationMs(match[1] ?? '');
}

const GO_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration (`1m30s`, `0`) in ms; null when it is not one. */
function goDurationMs(text: string): number | null {
  if (text === '0') return 0;
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return null;
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * (GO_UNITS[p[2] ?? ''] ?? 0), 0));
}

async function readLogind(files: HostFiles): Promise<ShutdownSettings> {
  const texts: string[] = [];
  try {
    texts.push(await readText(files, LOGIND_CONF));
  } catch (err) {
    return { logindError: bounded(`${LOGIND_CONF}: ${errorText(err)}`) };
  }
  // drop-ins in the order of their names; a name in a later directory replaces the same name before
  const dropIns = new Map<string, string>();
  for (const dir of LOGIND_DROP_IN_DIRS) {
    for (const name of (await files.list(dir)).filter((n) => n.endsWith('.conf')))
      dropIns.set(name, `${dir}/${name}`);
  }
  for (const name of [...dropIns.keys()].sort()) {
    const path = dropIns.get(name) ?? '';
    try {
      texts.push(await readText(files, path));
    } catch (err) {
      return { logindError: bounded(`${path}: ${errorText(err)}`) };
    }
  }
  const ms = inhibitDelayMaxMs(texts);
  if (ms === null) return { logindError: 'InhibitDelayMaxSec: not a time span' };
  return { inhibitDelayMax: goDuration(ms) };
}

/** InhibitDelayMaxSec of the [Login] section, the last setting winning; null when unreadable. */
export function inhibitDelayMaxMs(texts: readonly string[]): number | null {
  let value: string | undefined;
  for (const text of texts) {
    let section = '';
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (line.startsWith('[')) section = line;
      const m = /^InhibitDelayMaxSec\s*=\s*(.*)$/.exec(line);
      if (section === '[Login]' && m) value = (m[1] ?? '').trim();
    }
  }
  return value === undefined || value === '' ? LOGIND_DEFAULT_MS : systemdSpanMs(value);
}

const SPAN_UNITS: Record<string, number> = {
  us: 1e-3, ms: 1, s: 1000, sec: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, minute: 60_000, minutes: 60_000, h: 3_600_000, hr: 3_600_000, hour: 3_600_000, hours: 3_600_000,
}; // prettier-ignore

/** A systemd time span (`30`, `30s`, `1min 30s`) in ms; a bare number is seconds. */
export function systemdSpanMs(text: string): number | null {
  if (/^[0-9]+(\.[0-9]+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)\s*([a-z]+)\s*/g)];
  if (
    parts.length === 0 ||
    parts
      .map((p) => p[0])
      .join('')
      .trim() !== text.trim()
  )
    return null;
  let total = 0;
  for (const p of parts) {
    const unit = SPAN_UNITS[p[2] ?? ''];
    if (unit === undefined) return null;
    total += Number(p[1]) * unit;
  }
  return Math.round(total);
}

/** What the settings mean for the pods the drain leaves on the node, as `check --node` says it. */
export interface ShutdownMeaning {
  /** `ok`: they get a grace period; `warn`: they are killed hard (or cut short); `unknown`: not read. */
  level: 'ok' | 'warn' | 'unknown';
  meaning: string;
}

/** The meaning of `s` (as the agent published it). */
export function shutdownMeaning(s: ShutdownSettings): ShutdownMeaning {
  if (s.gracePeriod === undefined) {
    return {
      level: 'unknown',
      meaning: `kubelet shutdownGracePeriod cannot be read (${s.kubeletError ?? 'not published'})`,
    };
  }
  const grace = goDurationMs(s.gracePeriod) ?? 0;
  if (grace === 0) {
    return {
      level: 'warn',
      meaning:
        'kubelet shutdownGracePeriod is 0 (graceful node shutdown off): at the reboot the pods the drain leaves (DaemonSet pods, skipped pods) are killed without their grace period',
    };
  }
  const critical = `${s.criticalPods ?? '0s'} of it for critical pods`;
  if (s.inhibitDelayMax === undefined) {
    return {
      level: 'unknown',
      meaning: `kubelet shutdownGracePeriod ${s.gracePeriod} (${critical}); logind InhibitDelayMaxSec cannot be read (${s.logindError ?? 'not published'}): whether logind waits that long is unknown`,
    };
  }
  const inhibit = goDurationMs(s.inhibitDelayMax) ?? 0;
  if (inhibit < grace) {
    return {
      level: 'warn',
      meaning: `kubelet shutdownGracePeriod ${s.gracePeriod} but logind InhibitDelayMaxSec ${s.inhibitDelayMax}: logind waits only ${s.inhibitDelayMax}, then the pods the drain leaves are killed`,
    };
  }
  return {
    level: 'ok',
    meaning: `at the reboot the kubelet gives the pods the drain leaves ${s.gracePeriod} (${critical}); logind waits up to ${s.inhibitDelayMax}`,
  };
}

/** Reads a published `shutdown` object back (every field a bounded string, or dropped). */
export function parseShutdown(value: unknown): ShutdownSettings | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const out: ShutdownSettings = {};
  for (const key of [
    'gracePeriod',
    'criticalPods',
    'kubeletError',
    'inhibitDelayMax',
    'logindError',
  ] as const) {
    const field = v[key];
    if (typeof field === 'string') out[key] = bounded(field);
  }
  return out;
}
