// Times of day for maintenance windows: kured's formats, plus the ones kured wrongly rejects.

/**
 * Parses a time of day into seconds since local midnight.
 *
 * Accepts everything kured accepts (`0:00`, `17:00`, `23:59:59`, `9`, `9am`, `12pm`, `11:30am`)
 * and also what kured's Go layouts reject (`5:00pm` needs `05:00pm` there, `9:30AM` needs lower
 * case there). Minutes and seconds take exactly two digits, so `7:5` is rejected; 24-hour values
 * must be 0-23 and 12-hour values 0-12 (Go accepts `0am`/`0pm`, so we do too).
 * Throws an Error whose message is the reason (the caller adds flag and value).
 */
export function parseTimeOfDay(text: string): number {
  const match = /^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([ap]m)?$/i.exec(text.trim());
  if (!match) {
    throw new Error('expected a time such as 0:00, 9am, 17:00, 11:30am or 23:59:59');
  }
  const minute = Number(match[2] ?? '0');
  const second = Number(match[3] ?? '0');
  if (minute > 59 || second > 59) throw new Error(`${minute > 59 ? 'minute' : 'second'} must be 0-59`);
  return hourOf(Number(match[1]), match[4]?.toLowerCase()) * 3600 + minute * 60 + second;
}

function hourOf(hour: number, meridiem: string | undefined): number {
  if (meridiem === undefined) {
    if (hour > 23) throw new Error('hour must be 0-23');
    return hour;
  }
  if (hour > 12) throw new Error('hour must be 0-12 with am/pm');
  return (hour % 12) + (meridiem === 'pm' ? 12 : 0);
}

/** `09:00`, or `23:59:59` when the seconds are not zero. */
export function formatTimeOfDay(secondOfDay: number): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  const h = Math.floor(secondOfDay / 3600);
  const m = Math.floor((secondOfDay % 3600) / 60);
  const s = secondOfDay % 60;
  return s === 0 ? `${pad(h)}:${pad(m)}` : `${pad(h)}:${pad(m)}:${pad(s)}`;
}
