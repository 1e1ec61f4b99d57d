// A notifier: tells humans (Slack, Teams, a webhook) what the agent is about to do.

export type NotifyEvent = 'drain' | 'reboot' | 'uncordon';

export interface Notifier {
  /** Sends the message; never throws and never takes longer than its timeout (failures are logged). */
  notify(event: NotifyEvent, node: string, message: string): Promise<void>;
}

/** For configurations without --notify-url. */
export const silentNotifier: Notifier = { notify: () => Promise.resolve() };
