// What the client knows of the API server's health, from the requests the agent makes anyway: the
// /readyz answer without a request of its own (a probe every 10 s on every node would be the fleet's
// largest idle load on the API server).

/** The readiness answer. */
export interface ApiHealthState {
  ok: boolean;
  reason: string;
}

/**
 * Ready once a request has been answered, and as long as the latest request was answered: any HTTP
 * answer but 5xx and 429 means the API server is there (a 404 or 409 is an answer). A connection
 * error, a deadline or a 5xx/429 makes it unready until the next answered request. An idle agent
 * sends no request, and stays as the last one left it.
 */
export class ApiHealth {
  private answered = false;
  private failure: string | undefined;

  /** An HTTP answer with this status arrived. */
  answer(status: number, what: string): void {
    if (status >= 500 || status === 429) {
      this.failure = `${what}: HTTP ${status}`;
      return;
    }
    this.answered = true;
    this.failure = undefined;
  }

  /** No answer: a connection error or the deadline (not a request the caller abandoned). */
  fail(what: string, error: string): void {
    this.failure = `${what}: ${error}`;
  }

  state(): ApiHealthState {
    if (this.failure !== undefined)
      return { ok: false, reason: `the last API request failed: ${this.failure}` };
    if (!this.answered) return { ok: false, reason: 'no API request answered yet' };
    return { ok: true, reason: 'ok' };
  }
}
