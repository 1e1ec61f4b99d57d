// Credentials in a URL, hidden for logs and error messages.

/**
 * `value` with the user information of a URL (`//user:password@`) hidden. Works on text that is no
 * valid URL too (a bad proxy variable is named in its error without its password).
 */
export function hideUserInfo(value: string): string {
  return value.replace(/\/\/[^@/]*@/, '//<redacted>@');
}
