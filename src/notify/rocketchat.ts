// Rocket.Chat incoming webhooks: shoutrrr's `rocketchat://[user@]host[:port]/TOKEN_A/TOKEN_B[/channel|/@user]`.
import { jsonPost, segments, userInfo, type HttpTarget } from './target.js';

export function rocketchatTarget(url: URL): HttpTarget {
  const [tokenA, tokenB, to] = segments(url);
  if (url.host === '' || tokenA === undefined || tokenB === undefined) {
    throw new Error('rocketchat notify URL must be rocketchat://[user@]host/tokenA/tokenB[/channel]');
  }
  const { user } = userInfo(url);
  // a channel is #name (the URL's fragment is one too); @name is a direct message
  const fragment = url.hash.replace(/^#/, '');
  const channel =
    fragment !== '' ? `#${fragment}` : to === undefined ? '' : to.startsWith('@') ? to : `#${to}`;
  const endpoint = `https://${url.host}/hooks/${encodeURIComponent(tokenA)}/${encodeURIComponent(tokenB)}`;
  return {
    kind: 'rocketchat',
    requests: ({ message }) => [
      jsonPost(endpoint, {
        text: message,
        ...(user !== '' ? { username: user } : {}),
        ...(channel !== '' ? { channel } : {}),
      }),
    ],
  };
}
