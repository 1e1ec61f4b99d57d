// The API server's clock, as its answers tell it (the HTTP Date header, RFC 9110: every answer
// carries one). Times written on the server's clock (an approval by `kured-ts approve`) are judged
// against it, never against this machine's wall clock: a node whose clock runs 31 minutes fast would
// otherwise expire them early, one running slow keep them too long.

/** The offset of the server's clock from ours, as the latest answer showed it. */
export class ServerTime {
  private offsetMs: number | undefined;

  /** An answer arrived at our wall time `localMs` with this Date header (ignored when absent or bad). */
  observe(dateHeader: string | undefined, localMs: number): void {
    if (dateHeader === undefined) return;
    const serverMs = Date.parse(dateHeader);
    // the header has whole seconds: the server's clock read somewhere in [serverMs, serverMs + 1 s)
    if (!Number.isNaN(serverMs)) this.offsetMs = serverMs + 500 - localMs;
  }

  /** The server's time when ours is `local`; undefined before any answer told it. */
  at(local: Date): Date | undefined {
    return this.offsetMs === undefined ? undefined : new Date(local.getTime() + this.offsetMs);
  }
}
