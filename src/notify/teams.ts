// Microsoft Teams: workflow (Power Automate) webhooks and the older Office 365 connector webhooks.
import { jsonPost, type HttpTarget } from './target.js';

/**
 * Is this https URL a Teams webhook? Connector webhooks live on *.webhook.office.com; workflow
 * webhooks ("When a Teams webhook request is received") on *.logic.azure.com or
 * *.api.powerplatform.com with /workflows/ in the path.
 */
export function isTeamsWebhookUrl(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  if (host.endsWith('.webhook.office.com') || host === 'outlook.office.com') return true;
  const workflowHost = host.endsWith('.logic.azure.com') || host.endsWith('.powerplatform.com');
  return workflowHost && url.pathname.includes('/workflows/');
}

/**
 * shoutrrr's `teams://group@tenant/altId/groupOwner[/extraId]?host=org.webhook.office.com` →
 * `https://org.webhook.office.com/webhookb2/group@tenant/IncomingWebhook/altId/groupOwner[/extraId]`.
 */
export function teamsEndpoint(url: URL): string {
  const group = decodeURIComponent(url.username);
  const tenant = url.hostname;
  const path = url.pathname
    .split('/')
    .slice(1)
    .filter((p) => p !== '');
  if (group === '' || tenant === '' || path.length < 2 || path.length > 3) {
    throw new Error(
      'teams notify URL must be teams://group@tenant/altId/groupOwner?host=<org>.webhook.office.com',
    );
  }
  const host = url.searchParams.get('host') ?? 'outlook.office.com';
  const prefix = host === 'outlook.office.com' ? 'webhook' : 'webhookb2';
  return `https://${host}/${prefix}/${group}@${tenant}/IncomingWebhook/${path.join('/')}`;
}

/**
 * A message carrying one Adaptive Card: the only format Teams workflow webhooks accept (connector
 * webhooks accept it too).
 */
function teamsPayload(message: string): object {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [{ type: 'TextBlock', text: message, wrap: true }],
        },
      },
    ],
  };
}

/** A Teams webhook at `endpoint`. */
export function teamsTarget(endpoint: string): HttpTarget {
  return { kind: 'teams', requests: ({ message }) => [jsonPost(endpoint, teamsPayload(message))] };
}
