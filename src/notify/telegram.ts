// Telegram bots: shoutrrr's `telegram://TOKEN@telegram?chats=@channel,-100123[:thread]`.
import { flag, jsonPost, param, userInfo, type HttpTarget } from './target.js';

const API = 'https://api.telegram.org';

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One sendMessage per chat; with ?title= the title leads in bold (HTML), as shoutrrr does. */
export function telegramTarget(url: URL): HttpTarget {
  const { user, password } = userInfo(url);
  const token = `${user}:${password}`;
  if (!/^\d+:[A-Za-z0-9_-]+$/.test(token)) {
    throw new Error('telegram notify URL must be telegram://<bot id>:<bot token>@telegram?chats=…');
  }
  const chats = param(url, 'chats', 'channels')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  if (chats.length === 0) throw new Error('telegram notify URL names no chats (?chats=@channel,12345)');
  const title = param(url, 'title');
  const parseMode = param(url, 'parsemode');
  const preview = flag(url, 'preview', true);
  const notification = flag(url, 'notification', true);
  const endpoint = `${API}/bot${token}/sendMessage`;
  return {
    kind: 'telegram',
    requests: ({ message }) =>
      chats.map((chat) => {
        const [id = chat, thread] = chat.split(':');
        const html = title !== '' && (parseMode === '' || /^none$/i.test(parseMode));
        return jsonPost(endpoint, {
          chat_id: id,
          text: html ? `<b>${escapeHtml(title)}</b>\n${escapeHtml(message)}` : message,
          ...(thread !== undefined && /^\d+$/.test(thread) ? { message_thread_id: Number(thread) } : {}),
          ...(html
            ? { parse_mode: 'HTML' }
            : parseMode !== '' && !/^none$/i.test(parseMode)
              ? { parse_mode: parseMode }
              : {}),
          disable_web_page_preview: !preview,
          disable_notification: !notification,
        });
      }),
  };
}
