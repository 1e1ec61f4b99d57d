// Pushover: shoutrrr's `pushover://shoutrrr:API_TOKEN@USER_KEY/?devices=a,b&priority=…&title=…`.
import { formPost, param, userInfo, type HttpTarget } from './target.js';

const API = 'https://api.pushover.net/1/messages.json';

export function pushoverTarget(url: URL): HttpTarget {
  const { password: token } = userInfo(url);
  const user = url.hostname;
  if (token === '' || user === '') {
    throw new Error('pushover notify URL must be pushover://shoutrrr:<api token>@<user key>/');
  }
  const devices = param(url, 'devices');
  const title = param(url, 'title');
  const priority = param(url, 'priority') || '0';
  if (!/^(-2|-1|0|1|2)$/.test(priority)) throw new Error(`?priority=${priority} is not -2 to 2`);
  return {
    kind: 'pushover',
    requests: ({ message }) => [
      formPost(API, {
        token,
        user,
        message,
        ...(devices !== '' ? { device: devices } : {}),
        ...(title !== '' ? { title } : {}),
        priority,
      }),
    ],
  };
}
