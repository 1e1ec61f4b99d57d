// Slack incoming webhooks, addressed in the shoutrrr URL forms kured accepts.
import { jsonPost, type HttpTarget } from './target.js';

const SLACK_BASE_URL = 'https://hooks.slack.com';

/** Where and as whom to post. */
export interface SlackTarget {
  /** https://hooks.slack.com/services/T…/B…/X…. */
  endpoint: string;
  /** Display name (`slack://botname@…`, `?botname=` or `?username=`); old webhooks honour it. */
  username?: string;
  /** `?channel=`; only honoured by legacy webhooks. */
  channel?: string;
}

/**
 * Parses `slack://T/B/X`, `slack://botname@T/B/X` (shoutrrr ≤0.4, kured's form) and
 * `slack://hook:T-B-X@webhook` (shoutrrr ≥0.5). Bot API tokens (`slack://xoxb:…@channel`) are refused.
 */
export function parseSlackUrl(url: URL): SlackTarget {
  const tokens = slackTokens(url);
  if (tokens.length !== 3 || tokens.some((t) => t === '')) {
    throw new Error('slack notify URL must be slack://T…/B…/X… or slack://hook:T…-B…-X…@webhook');
  }
  // In the shoutrrr ≥0.5 form the user part is the literal 'hook', not a name.
  const userPart = url.password === '' ? decodeURIComponent(url.username) : '';
  const username = url.searchParams.get('botname') ?? url.searchParams.get('username') ?? userPart;
  const channel = url.searchParams.get('channel') ?? '';
  return {
    endpoint: `${SLACK_BASE_URL}/services/${tokens.map(encodeURIComponent).join('/')}`,
    ...(username !== '' ? { username } : {}),
    ...(channel !== '' ? { channel } : {}),
  };
}

function slackTokens(url: URL): string[] {
  if (url.password !== '') {
    if (url.username !== 'hook') {
      throw new Error('slack bot API tokens are not supported; use an incoming webhook (slack://T…/B…/X…)');
    }
    return decodeURIComponent(url.password).split('-');
  }
  return [url.hostname, ...url.pathname.split('/').slice(1)].map(decodeURIComponent);
}

/** The body of an incoming-webhook message. */
function slackPayload(target: SlackTarget, message: string): object {
  return {
    text: message,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.channel !== undefined ? { channel: target.channel } : {}),
  };
}

/** A slack:// URL, or Slack's own https://hooks.slack.com/services/… URL. */
export function slackTarget(target: SlackTarget): HttpTarget {
  return {
    kind: 'slack',
    requests: ({ message }) => [jsonPost(target.endpoint, slackPayload(target, message))],
  };
}
