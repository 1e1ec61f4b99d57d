// Gotify: shoutrrr's `gotify://host[:port][/subpath]/TOKEN[?priority=…&title=…&disabletls=yes]`.
import { flag, jsonPost, param, segments, type HttpTarget } from './target.js';

export function gotifyTarget(url: URL): HttpTarget {
  const path = segments(url);
  const token = path.pop();
  if (url.host === '' || token === undefined) {
    throw new Error('gotify notify URL must be gotify://host[/subpath]/<application token>');
  }
  const priorityText = param(url, 'priority') || '0';
  if (!/^-?\d+$/.test(priorityText)) throw new Error(`?priority=${priorityText} is not a whole number`);
  const title = param(url, 'title') || 'kured-ts';
  const scheme = flag(url, 'disabletls', false) ? 'http' : 'https';
  const prefix = path.map(encodeURIComponent).join('/');
  const endpoint = `${scheme}://${url.host}/${prefix === '' ? '' : `${prefix}/`}message?token=${encodeURIComponent(token)}`;
  return {
    kind: 'gotify',
    requests: ({ message }) => [jsonPost(endpoint, { message, title, priority: Number(priorityText) })],
  };
}
