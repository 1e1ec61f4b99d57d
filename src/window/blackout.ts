// Maintenance exclusions (`--blackout`): date or date-time ranges in the window's time zone during
// which no reboot starts, as GKE's maintenance exclusions. Compared as wall-clock text in the zone
// ("2026-12-24 18:00:00"), so a range keeps its local hours across DST changes.
//
//   2026-12-20/2027-01-03              whole days, both inclusive
//   2026-12-24T18:00/2026-12-26T08:00  from the first instant to the second (exclusive)
//   2026-12-24                         one whole day
//   12-20/01-03                        every year, whole days; wraps the year when the end comes first
import type { LocalTime } from './zone.js';

export interface Blackout {
  /** As given, for descriptions. */
  text: string;
  /** `YYYY-MM-DD HH:MM:SS`, or `MM-DD HH:MM:SS` for a yearly range: the first instant inside. */
  from: string;
  /** The first instant after the range, in the same form (exclusive). */
  until: string;
  /** Every year (MM-DD): may wrap the year's end. */
  yearly: boolean;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}))?$/;
const MONTH_DAY = /^(\d{2})-(\d{2})$/;

const two = (n: number): string => String(n).padStart(2, '0');

/** A calendar date's parts, checked (Feb 30 is refused); the year 2000 stands in for yearly dates. */
function checkedDate(year: number, month: number, day: number): Date {
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) throw new Error('no such date');
  return date;
}

function dateText(d: Date): string {
  return `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
}

const nextDay = (d: Date): Date => new Date(d.getTime() + 86_400_000);

/** One end of a dated range: its local text, and (for a whole day) the text of the next midnight. */
function datedEnd(text: string): { at: string; dayAfter: string | undefined } {
  const m = DATE.exec(text);
  if (!m) throw new Error(`expected YYYY-MM-DD or YYYY-MM-DDTHH:MM, got "${text}"`);
  const date = checkedDate(Number(m[1]), Number(m[2]), Number(m[3]));
  if (m[4] === undefined)
    return { at: `${dateText(date)} 00:00:00`, dayAfter: `${dateText(nextDay(date))} 00:00:00` };
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  if (hour > 23 || minute > 59) throw new Error(`no such time of day in "${text}"`);
  return { at: `${dateText(date)} ${two(hour)}:${two(minute)}:00`, dayAfter: undefined };
}

function yearlyEnd(text: string): { at: string; dayAfter: string } {
  const m = MONTH_DAY.exec(text);
  if (!m) throw new Error(`expected MM-DD, got "${text}"`);
  // 2000 is a leap year: 02-29 is a date, and the day after 02-28 is 02-29.
  const date = checkedDate(2000, Number(m[1]), Number(m[2]));
  const after = nextDay(date);
  return {
    at: `${two(date.getUTCMonth() + 1)}-${two(date.getUTCDate())} 00:00:00`,
    dayAfter: `${two(after.getUTCMonth() + 1)}-${two(after.getUTCDate())} 00:00:00`,
  };
}

/** Parses one --blackout range; throws an Error with the reason. */
export function parseBlackout(text: string): Blackout {
  const value = text.trim();
  const [first = '', second, extra] = value.split('/');
  if (extra !== undefined || first === '') throw new Error('expected FROM/TO (or one date)');
  const end = second ?? first;
  if (MONTH_DAY.test(first)) {
    const from = yearlyEnd(first);
    return { text: value, from: from.at, until: yearlyEnd(end).dayAfter, yearly: true };
  }
  const from = datedEnd(first);
  const to = datedEnd(end);
  const until = to.dayAfter ?? to.at;
  if (until <= from.at) throw new Error(`"${value}" ends before it starts`);
  return { text: value, from: from.at, until, yearly: false };
}

/** Is the local time inside the range? */
export function inBlackout(b: Blackout, local: LocalTime): boolean {
  const text = b.yearly ? local.text.slice(5) : local.text;
  if (!b.yearly || b.from < b.until) return text >= b.from && text < b.until;
  // A yearly range that wraps the year's end (12-20/01-03).
  return text >= b.from || text < b.until;
}
