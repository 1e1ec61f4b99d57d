// Durations as people read them. Two forms, one home: Go's exact form (what kured's flags accept,
// for configuration and flag defaults) and a short form for reasons, reports and tables.

/** Go's time.Duration.String(): `1h30m0s`, `1m30s`, `500ms`, `0s` (parseDuration reads it back). */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  return `${sign}${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${s}s`;
}

/**
 * Rounded to what matters at its size: `41s`, `3m20s`, `5m`, `2h05m`, `3d04h`. Whole seconds below an
 * hour, whole minutes below a day, whole hours beyond.
 */
export function shortDuration(ms: number): string {
  const total = Math.round(Math.abs(ms) / 1000);
  const sign = ms < 0 && total > 0 ? '-' : '';
  const d = Math.floor(total / 86_400);
  const h = Math.floor((total % 86_400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const two = (n: number): string => String(n).padStart(2, '0');
  if (d > 0) return `${sign}${d}d${two(h)}h`;
  if (h > 0) return `${sign}${h}h${two(m)}m`;
  if (m > 0) return `${sign}${s > 0 ? `${m}m${two(s)}s` : `${m}m`}`;
  return `${sign}${s}s`;
}
