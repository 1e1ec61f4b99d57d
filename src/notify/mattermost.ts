// Mattermost incoming webhooks: shoutrrr's `mattermost://[user@]host[:port]/TOKEN[/channel][?icon=…]`.
import { flag, jsonPost, param, segments, userInfo, type HttpTarget } from './target.js';

export function mattermostTarget(url: URL): HttpTarget {
  const [token, channel] = segments(url);
  if (url.host === '' || token === undefined) {
    throw new Error('mattermost notify URL must be mattermost://[user@]host/token[/channel]');
  }
  const { user } = userInfo(url);
  const icon = param(url, 'icon', 'icon_emoji', 'icon_url');
  const scheme = flag(url, 'disabletls', false) ? 'http' : 'https';
  const endpoint = `${scheme}://${url.host}/hooks/${encodeURIComponent(token)}`;
  return {
    kind: 'mattermost',
    requests: ({ message }) => [
      jsonPost(endpoint, {
        text: message,
        ...(user !== '' ? { username: user } : {}),
        ...(channel !== undefined ? { channel } : {}),
        ...(icon === '' ? {} : /^https?:\/\//.test(icon) ? { icon_url: icon } : { icon_emoji: icon }),
      }),
    ],
  };
}
