// Discord webhooks: shoutrrr's `discord://TOKEN@WEBHOOK_ID[?username=…&avatar=…&title=…]`.
import { jsonPost, param, userInfo, type HttpTarget } from './target.js';

const API = 'https://discord.com/api/webhooks';

/** shoutrrr's colour of a plain message's embed. */
const COLOR = 0x50d9ff;

/** The message as one embed, as shoutrrr sends plain text. */
export function discordTarget(url: URL): HttpTarget {
  const id = url.hostname;
  const { user: token } = userInfo(url);
  if (id === '' || token === '') throw new Error('discord notify URL must be discord://<token>@<webhook id>');
  if (url.pathname !== '' && url.pathname !== '/') {
    throw new Error(
      `discord notify URL: ${url.pathname} is not supported (kured-ts sends text, not raw JSON)`,
    );
  }
  const endpoint = `${API}/${encodeURIComponent(id)}/${encodeURIComponent(token)}`;
  const username = param(url, 'username');
  const avatar = param(url, 'avatar', 'avatarurl');
  const title = param(url, 'title');
  return {
    kind: 'discord',
    requests: ({ message }) => [
      jsonPost(endpoint, {
        embeds: [{ ...(title !== '' ? { title } : {}), description: message, color: COLOR }],
        ...(username !== '' ? { username } : {}),
        ...(avatar !== '' ? { avatar_url: avatar } : {}),
      }),
    ],
  };
}
