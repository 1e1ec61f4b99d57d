// A maintenance window: when reboots may start.

export interface Window {
  /** Is this instant inside the window? */
  contains(at: Date): boolean;
  /** The window in words, e.g. "mon-fri 09:00-17:00 America/Los_Angeles". */
  describe(): string;
  /** When the window next opens (if outside) or closes (if inside), within a search horizon. */
  next(at: Date): { inside: boolean; change: Date | undefined };
}
