// One line of text for any thrown value: what logs, reasons and command errors show.

/**
 * The error's message (its first line), followed by its cause's when the message does not already
 * say it; String(value) for anything that is not an Error.
 */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const first = (text: string): string => text.split('\n')[0] ?? text;
  const message = first(err.message);
  const cause = err.cause instanceof Error ? first(err.cause.message) : '';
  return cause === '' || message.includes(cause) ? message : `${message}: ${cause}`;
}
