// Days of the week for maintenance windows: numbers, names, abbreviations and ranges.

const DAY_NAMES: Record<string, number> = {
  su: 0, sun: 0, sunday: 0,
  mo: 1, mon: 1, monday: 1,
  tu: 2, tue: 2, tues: 2, tuesday: 2,
  we: 3, wed: 3, wednesday: 3,
  th: 4, thu: 4, thur: 4, thurs: 4, thursday: 4,
  fr: 5, fri: 5, friday: 5,
  sa: 6, sat: 6, saturday: 6,
}; // prettier-ignore

const SHORT = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

function parseDay(token: string): number {
  if (/^\d+$/.test(token)) {
    const n = Number(token);
    if (n > 6) throw new Error(`day number ${token} out of range 0-6 (0 = Sunday)`);
    return n;
  }
  const day = DAY_NAMES[token.toLowerCase()];
  if (day === undefined) throw new Error(`unknown day "${token}"`);
  return day;
}

/** `mon-fri` or `5-1`: inclusive, and a range may wrap over the week's end (`fri-mon`). */
function parseToken(token: string): number[] {
  const range = /^([^-\s]+)\s*-\s*([^-\s]+)$/.exec(token);
  if (!range) return [parseDay(token)];
  const from = parseDay(range[1] ?? '');
  const to = parseDay(range[2] ?? '');
  const days: number[] = [];
  for (let d = from; ; d = (d + 1) % 7) {
    days.push(d);
    if (d === to) return days;
  }
}

/**
 * Parses `--reboot-days` values (each may hold a comma-separated list, as kured's string slice):
 * `0`-`6` (0 = Sunday), names and abbreviations case-insensitively (`su`, `Mon`, `tuesday`), and
 * ranges (`mon-fri`, `1-5`, `sat-sun`). Returns sorted, de-duplicated day numbers. An empty value
 * gives an empty list, which means the window never opens (as in kured).
 */
export function parseDays(values: readonly string[]): number[] {
  const days = new Set<number>();
  for (const value of values) {
    for (const token of value.split(',').map((t) => t.trim())) {
      if (token !== '') parseToken(token).forEach((d) => days.add(d));
    }
  }
  return [...days].sort((a, b) => a - b);
}

/** `every day`, `never`, `mon-fri`, `sun,tue,thu-sat`-style text for a sorted day list. */
export function formatDays(days: readonly number[]): string {
  if (days.length === 7) return 'every day';
  if (days.length === 0) return 'never';
  return runsOf(days)
    .map((run) => {
      const names = run.map((d) => SHORT[d] ?? String(d));
      return names.length >= 3 ? `${names[0] ?? ''}-${names[names.length - 1] ?? ''}` : names.join(',');
    })
    .join(',');
}

/** Splits sorted days into runs of consecutive days. */
function runsOf(days: readonly number[]): number[][] {
  const runs: number[][] = [];
  for (const day of days) {
    const run = runs[runs.length - 1];
    if (run !== undefined && run[run.length - 1] === day - 1) run.push(day);
    else runs.push([day]);
  }
  return runs;
}
