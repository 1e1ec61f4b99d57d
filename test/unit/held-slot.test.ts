// HeldSlot: the one answer to "do we hold a slot?"; only a proven slot's lease is renewed.
import { describe, expect, it } from '@jest/globals';
import { HeldSlot } from '../../src/lock/held-slot.js';
import { FakeLock, FakeLockTable } from '../fakes/fake-lock.js';
import { FakeClock } from '../fakes/fake-clock.js';

function setUp(): { table: FakeLockTable; slot: HeldSlot } {
  const table = new FakeLockTable(1, new FakeClock());
  return { table, slot: new HeldSlot(new FakeLock(table, 'n1')) };
}

describe('HeldSlot', () => {
  it('holds and renews a slot acquire() gave, until it is released', async () => {
    const { table, slot } = setUp();
    await slot.acquire({ unschedulable: false });
    expect(slot.held).toBe(true);
    await slot.renew();
    expect(table.renewals).toBe(1);
    await slot.release();
    expect(slot.held).toBe(false);
    await slot.renew();
    expect(table.renewals).toBe(1);
  });

  it('never renews an entry naming this node that no cycle of ours proves', async () => {
    const { table, slot } = setUp();
    table.takeFor('n1'); // a forged entry, or one left by a crash before the cycle began
    expect(await slot.holding(undefined, { inCycle: false })).toBeDefined();
    expect(slot.held).toBe(false);
    await slot.renew();
    expect(table.renewals).toBe(0);
  });

  it('counts an entry as held once our cycle record proves it', async () => {
    const { table, slot } = setUp();
    table.takeFor('n1');
    await slot.holding(undefined, { inCycle: true });
    expect(slot.held).toBe(true);
  });

  it('holds nothing once the entry is gone (a lock wiped), and stops renewing', async () => {
    const { table, slot } = setUp();
    await slot.acquire({ unschedulable: false });
    table.set('n1', undefined);
    await slot.renew();
    expect(slot.held).toBe(false);
    expect(await slot.holding(undefined, { inCycle: true })).toBeUndefined();
    expect(slot.held).toBe(false);
  });

  it('holds nothing after a refused acquisition', async () => {
    const { table, slot } = setUp();
    table.takeFor('n2');
    const result = await slot.acquire({ unschedulable: false });
    expect(result.acquired).toBe(false);
    expect(slot.held).toBe(false);
  });
});
