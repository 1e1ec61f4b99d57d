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
 * Inside when the minute containing the instant matches the expression in the window's zone
 * (node-cron's own matcher; every field must match, node-cron ANDs day-of-month and day-of-week).
 */
export class CronWindow implements Window {
  constructor(
    private readonly expression: string,
    private readonly timeZone: string,
  ) {
    checkCronExpression(expression);
  }

  contains(at: Date): boolean {
    return this.withMatcher((task) => this.matches(task, at));
  }

  describe(): string {
    return `cron "${this.expression}" ${this.timeZone}`;
  }

  next(at: Date): { inside: boolean; change: Date | undefined } {
    return this.withMatcher((task) => nextChange((t) => this.matches(task, t), at));
  }

  private matches(task: ScheduledTask, at: Date): boolean {
    const minute = new Date(Math.floor(at.getTime() / 60_000) * 60_000);
    return task.match(minute);
  }

  /**
   * node-cron only exposes its matcher on a task, and keeps every task in a module-level registry:
   * create a stopped one, use it, destroy it, so nothing lingers and no timer ever starts.
   */
  private withMatcher<T>(use: (task: ScheduledTask) => T): T {
    const task = cron.createTask(this.expression, () => undefined, { timezone: this.timeZone });
    try {
      return use(task);
    } finally {
      void task.destroy();
    }
  }
}
