// A notifier: tells humans (Slack, Teams, a webhook) what the agent is about to do, and what failed.

/** kured's three: the steps of a reboot cycle. */
const CYCLE_EVENTS = ['drain', 'reboot', 'uncordon'] as const;

/**
 * What went wrong, told where people look (not only in Events and alert rules): a drain that failed,
 * a node quarantined, a reboot that did not happen, a node not back within --post-reboot-timeout, a
 * wave halted by its failure budget, a node past its --reboot-deadline.
 */
export const FAILURE_EVENTS = [
  'drain-failed',
  'quarantined',
  'reboot-failed',
  'not-back',
  'wave-halted',
  'overdue',
] as const;

export type FailureEvent = (typeof FAILURE_EVENTS)[number];

/** Every kind of notification (--notify-events names them). */
export const NOTIFY_EVENTS = [...CYCLE_EVENTS, ...FAILURE_EVENTS] as const;

export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

export interface Notifier {
  /** Sends the message; never throws and never takes longer than its timeout (failures are logged). */
  notify(event: NotifyEvent, node: string, message: string): Promise<void>;
}

/** For configurations without --notify-url. */
export const silentNotifier: Notifier = { notify: () => Promise.resolve() };
