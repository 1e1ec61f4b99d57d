// A cron maintenance window (`--reboot-schedule`): inside while the current minute matches.
import cron, { type ScheduledTask } from 'node-cron';
import { nextChange } from './scan.js';
import type { Window } from './window.js';

/**
 * Checks a `--reboot-schedule` expression: five fields (minute hour day-of-month month
 * day-of-week, as node-cron 4 reads them) or a nickname such as `@daily`. A sixth (seconds) field
 * is refused: windows are matched per minute. Throws an Error with the reason.
 */
export function checkCronExpression(expression: string): string {
  const text = expression.trim();
  if (!text.startsWith('@') && text.split(/\s+/).length !== 5) {
    throw new Error('expected 5 cron fields: minute hour day-of-month month day-of-week');
  }
  const result = cron.validateDetailed(text);
  if (!result.valid) {
    const reasons = result.errors.map((e) => e.message).join('; ');
    throw new Error(reasons === '' ? 'invalid cron expression' : reasons);
  }
  return text;
}

/**
 * Inside when the minute containing the instant matches one of the expressions (several windows at
 * once: `--reboot-schedule` repeated) in the window's zone (node-cron's own matcher; every field must
 * match, node-cron ANDs day-of-month and day-of-week).
 */
export class CronWindow implements Window {
  private readonly expressions: readonly string[];

  constructor(
    expressions: string | readonly string[],
    private readonly timeZone: string,
  ) {
    this.expressions = typeof expressions === 'string' ? [expressions] : expressions;
    if (this.expressions.length === 0) throw new Error('no cron expression');
    for (const e of this.expressions) checkCronExpression(e);
  }

  contains(at: Date): boolean {
    return this.withMatchers((tasks) => this.matches(tasks, at));
  }

  describe(): string {
    return `cron ${this.expressions.map((e) => `"${e}"`).join(' or ')} ${this.timeZone}`;
  }

  next(at: Date): { inside: boolean; change: Date | undefined } {
    return this.withMatchers((tasks) => nextChange((t) => this.matches(tasks, t), at));
  }

  private matches(tasks: readonly ScheduledTask[], at: Date): boolean {
    const minute = new Date(Math.floor(at.getTime() / 60_000) * 60_000);
    return tasks.some((task) => task.match(minute));
  }

  /**
   * node-cron only exposes its matcher on a task, and keeps every task in a module-level registry:
   * create stopped ones, use them, destroy them, so nothing lingers and no timer ever starts.
   */
  private withMatchers<T>(use: (tasks: readonly ScheduledTask[]) => T): T {
    const tasks = this.expressions.map((e) =>
      cron.createTask(e, () => undefined, { timezone: this.timeZone }),
    );
    try {
      return use(tasks);
    } finally {
      for (const task of tasks) void task.destroy();
    }
  }
}
