// The simulated hosts' outages: every time a host was down (for the timeline), how many are down now
// and at most (against --concurrency), and the same per zone with --zones (each node's zone round
// robin over zone-a, zone-b, …).
export class Outages {
  /** Every time a host was down (virtual ms; upAtMs unset while it still is). */
  readonly list: { node: string; downAtMs: number; upAtMs?: number }[] = [];
  /** Hosts down right now, and the most seen at once. */
  now = 0;
  max = 0;
  /** Per zone: hosts down right now, and the most seen at once. */
  readonly nowByZone = new Map<string, number>();
  readonly maxByZone = new Map<string, number>();
  private readonly zones = new Map<string, string>();

  /** Places the `i`th node (from 1) `name` in a zone of `count` (none when count is 0). */
  place(name: string, i: number, count: number): void {
    if (count > 0) this.zones.set(name, `zone-${String.fromCharCode(97 + ((i - 1) % count))}`);
  }

  /** The zone of a node, undefined without zones. */
  zoneOf(name: string): string | undefined {
    return this.zones.get(name);
  }

  /** The host `name` went down at `atMs`. */
  down(name: string, atMs: number): void {
    this.list.push({ node: name, downAtMs: atMs });
    this.now++;
    this.max = Math.max(this.max, this.now);
    this.countZone(name, 1);
  }

  /** The host `name` is up again at `atMs`. */
  up(name: string, atMs: number): void {
    const outage = this.list.findLast((o) => o.node === name && o.upAtMs === undefined);
    if (outage) outage.upAtMs = atMs;
    this.now--;
    this.countZone(name, -1);
  }

  /** The outages with times from `startMs` (the timeline's). */
  since(startMs: number): { node: string; downAtMs: number; upAtMs: number | undefined }[] {
    return this.list.map((o) => ({
      node: o.node,
      downAtMs: o.downAtMs - startMs,
      upAtMs: o.upAtMs === undefined ? undefined : o.upAtMs - startMs,
    }));
  }

  private countZone(name: string, delta: number): void {
    const zone = this.zones.get(name);
    if (zone === undefined) return;
    const now = (this.nowByZone.get(zone) ?? 0) + delta;
    this.nowByZone.set(zone, now);
    this.maxByZone.set(zone, Math.max(this.maxByZone.get(zone) ?? 0, now));
  }
}
