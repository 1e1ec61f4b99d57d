// Time zones: IANA names checked with Intl, and an instant's wall-clock fields in a zone.
//
// UTC, the default, never touches Intl: the first Intl.DateTimeFormat with a time zone loads ICU's
// time zone data, about 8 MB of resident memory on every node (bench: memory floors).

/** The zone the process runs in (what kured's `Local` means). */
export function processTimeZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/**
 * Checks an IANA zone name with Intl and returns its canonical spelling. `Local` (kured) is the
 * process zone. Throws an Error with the reason.
 */
export function checkTimeZone(name: string): string {
  if (name === 'UTC') return name;
  if (name === 'Local') return processTimeZone();
  if (name.trim() === '') throw new Error('time zone must not be empty');
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw new Error('unknown time zone (expected an IANA name such as UTC or Europe/Berlin)');
  }
}

/** Wall-clock fields of an instant in a zone. */
export interface LocalTime {
  /** 0 = Sunday. */
  weekday: number;
  /** Seconds since local midnight, with the milliseconds as a fraction. */
  secondOfDay: number;
  /** `2026-11-23 09:00:00`. */
  text: string;
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

/** Converts instants to wall-clock fields of one zone; holds its Intl formatter (they are costly). */
export class ZoneClock {
  /** undefined for UTC, read with the Date's UTC fields. */
  private readonly format: Intl.DateTimeFormat | undefined;

  constructor(readonly timeZone: string) {
    if (timeZone === 'UTC') return;
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      weekday: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
  }

  local(at: Date): LocalTime {
    const parts = this.format === undefined ? utcParts(at) : zoneParts(this.format, at);
    const num = (key: string): number => Number(parts[key] ?? '0');
    const ms = ((at.getTime() % 1000) + 1000) % 1000;
    return {
      weekday: WEEKDAYS[parts.weekday ?? ''] ?? 0,
      secondOfDay: num('hour') * 3600 + num('minute') * 60 + num('second') + ms / 1000,
      text: `${parts.year ?? ''}-${parts.month ?? ''}-${parts.day ?? ''} ${parts.hour ?? ''}:${parts.minute ?? ''}:${parts.second ?? ''}`,
    };
  }
}

function zoneParts(format: Intl.DateTimeFormat, at: Date): Record<string, string> {
  const parts: Record<string, string> = {};
  for (const p of format.formatToParts(at)) parts[p.type] = p.value;
  return parts;
}

/** The fields formatToParts gives, for UTC, from the Date itself. */
function utcParts(at: Date): Record<string, string> {
  const two = (n: number): string => String(n).padStart(2, '0');
  return {
    weekday: Object.keys(WEEKDAYS)[at.getUTCDay()] ?? 'Sun',
    year: String(at.getUTCFullYear()),
    month: two(at.getUTCMonth() + 1),
    day: two(at.getUTCDate()),
    hour: two(at.getUTCHours()),
    minute: two(at.getUTCMinutes()),
    second: two(at.getUTCSeconds()),
  };
}
