// Google Chat webhooks: shoutrrr's `googlechat://chat.googleapis.com/v1/spaces/S/messages?key=K&token=T`
// (the webhook URL Google gives, with googlechat:// for https://).
import { jsonPost, param, type HttpTarget } from './target.js';

export function googlechatTarget(url: URL): HttpTarget {
  const key = param(url, 'key');
  const token = param(url, 'token');
  if (url.host === '' || key === '' || token === '') {
    throw new Error(
      'googlechat notify URL must be googlechat://chat.googleapis.com/v1/spaces/…/messages?key=…&token=…',
    );
  }
  const query = new URLSearchParams({ key, token });
  const endpoint = `https://${url.host}${url.pathname}?${query.toString()}`;
  return { kind: 'googlechat', requests: ({ message }) => [jsonPost(endpoint, { text: message })] };
}
