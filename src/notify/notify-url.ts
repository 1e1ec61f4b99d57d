// Notification URLs as operators write them: quoted or not, kured's --slack-hook-url, secrets inside.

/** Removes one pair of matching single or double quotes around the value (kured's stripQuotes). */
export function stripQuotes(value: string): string {
  if (value.length > 2) {
    const first = value[0];
    if (first === value[value.length - 1] && (first === '"' || first === "'")) return value.slice(1, -1);
  }
  return value;
}

/**
 * The URL with everything that may be secret hidden: user info, path, query and fragment are
 * replaced by `/<redacted>`; scheme and host stay so that the operator can tell which service it is.
 * Use it whenever a notification URL reaches a log line (the effective config, a failure).
 */
export function redactUrl(raw: string): string {
  const value = stripQuotes(raw.trim());
  if (value === '') return '';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return '<redacted>';
  }
  const hidden =
    url.username !== '' ||
    url.password !== '' ||
    (url.pathname !== '' && url.pathname !== '/') ||
    url.search !== '' ||
    url.hash !== '';
  return `${url.protocol}//${url.host}${hidden ? '/<redacted>' : ''}`;
}

/**
 * kured's conversion of the deprecated --slack-hook-url into a --notify-url:
 * `https://hooks.slack.com/services/T/B/X` → `slack://T/B/X`. Throws when the URL does not have
 * exactly three token parts after /services/ (kured then sends nothing; we refuse to start).
 */
export function slackHookUrlToNotifyUrl(hookUrl: string): string {
  const value = stripQuotes(hookUrl.trim());
  let url: URL;
  try {
    url = new URL(value);
  } catch (err: unknown) {
    throw new Error(`slack hook URL ${redactUrl(value)} is not a URL`, { cause: err });
  }
  // kured trims with Go's strings.Trim(path, "/services/"), which also eats token characters from
  // that set at both ends; we remove the prefix only.
  const parts = url.pathname
    .replace(/^\/services\//, '')
    .replace(/\/+$/, '')
    .split('/');
  if (parts.length !== 3 || parts.some((p) => p === '')) {
    throw new Error(
      `slack hook URL ${redactUrl(value)} must look like https://hooks.slack.com/services/T…/B…/X…`,
    );
  }
  return `slack://${parts.join('/')}`;
}
