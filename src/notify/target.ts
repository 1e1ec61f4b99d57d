// What a notification service is sent: one or more HTTP requests built from the event. Each service
// (slack.ts, telegram.ts, …) turns its shoutrrr URL into an HttpTarget; HttpNotifier sends it.
import type { NotifyEvent } from './notifier.js';

/** One notification, as every service gets it. */
interface NotifyMessage {
  event: NotifyEvent;
  node: string;
  /** The rendered --message-template-* text. */
  message: string;
  time: Date;
}

/** One HTTP request of a notification. Its URL is secret (tokens): only ever logged redacted. */
export interface NotifyRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** A service reached over HTTP: its name for log lines, and the requests of one notification. */
export interface HttpTarget {
  kind: string;
  requests: (message: NotifyMessage) => NotifyRequest[];
}

/** A JSON POST. */
export function jsonPost(url: string, body: unknown): NotifyRequest {
  return { url, method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) };
}

/** An application/x-www-form-urlencoded POST. */
export function formPost(url: string, fields: Record<string, string>): NotifyRequest {
  return {
    url,
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  };
}

/** A query value, trying each alias, keys case-insensitive as shoutrrr reads them; '' when unset. */
export function param(url: URL, ...keys: string[]): string {
  for (const key of keys) {
    for (const [name, value] of url.searchParams) if (name.toLowerCase() === key) return value;
  }
  return '';
}

/** shoutrrr's boolean query values: yes/no, true/false, 1/0 (case-insensitive). */
export function flag(url: URL, key: string, fallback: boolean): boolean {
  const value = param(url, key);
  if (value === '') return fallback;
  if (/^(yes|true|1|on)$/i.test(value)) return true;
  if (/^(no|false|0|off)$/i.test(value)) return false;
  throw new Error(`?${key}=${value} is not yes or no`);
}

/** The path's segments, each decoded, empty ones dropped. */
export function segments(url: URL): string[] {
  return url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
}

/** The URL's user and password, decoded. */
export function userInfo(url: URL): { user: string; password: string } {
  return { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
}
