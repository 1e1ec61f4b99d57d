// shoutrrr's generic webhook: `generic://host/path?…` (https), `generic+http://…` or
// `generic+https://…`, or ?disabletls=yes for http. Its own query keys are taken out of the URL,
// `@Header=value` sets a request header and `$key=value` adds a field to the JSON template; every
// other query parameter stays on the webhook's URL.
import { flag, param, type HttpTarget } from './target.js';

/** Query keys that configure the sender instead of addressing the webhook. */
const OWN = ['contenttype', 'disabletls', 'template', 'title', 'titlekey', 'messagekey', 'method'];

/** `X-Api-Key` from `XApiKey` or `x-api-key`: a dash before each inner capital, each word capitalised. */
function headerName(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] ?? '';
    const afterDash = i === 0 || raw[i - 1] === '-';
    if (c >= 'A' && c <= 'Z') out += afterDash ? c : `-${c}`;
    else out += afterDash ? c.toUpperCase() : c;
  }
  return out;
}

/** https unless `generic+http://` or ?disabletls=yes. */
function useTls(url: URL): boolean {
  const scheme = url.protocol.replace(/^generic\+?/, '').replace(/:$/, '');
  if (scheme === '') return !flag(url, 'disabletls', false);
  if (scheme !== 'http' && scheme !== 'https') {
    throw new Error(
      `generic+${scheme}:// is not supported (use generic://, generic+http:// or generic+https://)`,
    );
  }
  return scheme === 'https';
}

/** The query split into headers (@), template fields ($) and what stays on the webhook's URL. */
function split(url: URL): { headers: Record<string, string>; extra: Record<string, string>; query: string } {
  const headers: Record<string, string> = {};
  const extra: Record<string, string> = {};
  const query = new URLSearchParams();
  for (const [key, value] of url.searchParams) {
    if (key.startsWith('@')) headers[headerName(key.slice(1))] = value;
    else if (key.startsWith('$')) extra[key.slice(1)] = value;
    else if (!OWN.includes(key.toLowerCase())) query.append(key, value);
  }
  return { headers, extra, query: query.toString() };
}

export function genericTarget(url: URL): HttpTarget {
  const tls = useTls(url);
  if (url.host === '') throw new Error('generic notify URL names no host');
  const json = param(url, 'template');
  if (json !== '' && json.toLowerCase() !== 'json') {
    throw new Error(`?template=${json} is not supported (use template=json or none)`);
  }
  const { headers, extra, query } = split(url);
  const endpoint = `${tls ? 'https' : 'http'}://${url.host}${url.pathname}${query === '' ? '' : `?${query}`}`;
  const contentType = param(url, 'contenttype') || 'application/json';
  const method = (param(url, 'method') || 'POST').toUpperCase();
  const title = param(url, 'title');
  const fields = (message: string): Record<string, string> => ({
    ...extra,
    ...(title !== '' ? { [param(url, 'titlekey') || 'title']: title } : {}),
    [param(url, 'messagekey') || 'message']: message,
  });
  return {
    kind: 'generic',
    requests: ({ message }) => [
      {
        url: endpoint,
        method,
        headers: { 'Content-Type': contentType, Accept: contentType, ...headers },
        body: json === '' ? message : JSON.stringify(fields(message)),
      },
    ],
  };
}
