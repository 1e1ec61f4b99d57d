// A generic JSON webhook: any http(s) URL that is neither Slack nor Teams.
import type { NotifyEvent } from './notifier.js';
import { jsonPost, type HttpTarget } from './target.js';

/** The body posted to a generic webhook. */
interface WebhookPayload {
  event: NotifyEvent;
  node: string;
  message: string;
  /** RFC 3339 UTC. */
  time: string;
}

function webhookPayload(event: NotifyEvent, node: string, message: string, time: Date): WebhookPayload {
  return { event, node, message, time: time.toISOString() };
}

/** Any other http(s) URL: {event, node, message, time} as JSON. */
export function webhookTarget(endpoint: string): HttpTarget {
  return {
    kind: 'webhook',
    requests: ({ event, node, message, time }) => [
      jsonPost(endpoint, webhookPayload(event, node, message, time)),
    ],
  };
}
