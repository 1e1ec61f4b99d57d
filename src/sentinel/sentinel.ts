// A sentinel: does this host need a reboot?

/** required, or not; an error means "not required now" (never a reboot), reported by the agent. */
export type SentinelVerdict = { required: boolean; error?: undefined } | { required: false; error: string };

export interface Sentinel {
  rebootRequired(signal?: AbortSignal): Promise<SentinelVerdict>;
}
