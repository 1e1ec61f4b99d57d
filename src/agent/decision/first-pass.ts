// DESIGN §1 from a node that needs its reboot to the reboot request, read top-down: each step returns
// data, an outcome that ends the pass or what the next step needs. Nothing is kept between steps but
// what they return and the node as last read (Pass.node).
import type { Outcome } from '../outcome.js';
import { detect, taint, type BeforeLockView } from './before-lock.js';
import { slotMetaOf } from './acquisition.js';
import { takeFleetLock } from './fleetlock.js';
import { runToSlot, type SlotActions } from './to-slot.js';
import { cordon, drainAndDelay, verifyAndReboot, type Handoff } from './cycle.js';
import type { Pass } from './pass.js';
import { haltedBeforeDrain, joinWave } from './wave.js';
import { abortBeforeReboot } from './cycle-end.js';

/**
 * The first pass of a cycle: no slot and no cycle record (phase before-lock), or an entry naming this
 * node that no record proves (`unproven`: it is asked for anew, and given back when held back).
 */
export async function firstPass(pass: Pass, unproven = false): Promise<Outcome | Handoff> {
  const need = await detect(pass); //                          the sentinel, or an admin's request
  if (!need.required) return need.outcome; //                  no: our taint off, idle
  const pending = await taint(pass); //                        PreferNoSchedule at once, status pending
  await joinWave(pass); //                                      its wave, when one is tracked
  if (!pass.acquire) return pending; //                        start-up: no further
  const meta = slotMetaOf(pass.config, pass.node, pass.deps.waves !== undefined); // its slot's record
  const ask = { verdict: need.verdict, meta, unproven };
  const { end } = await runToSlot(viewOf(pass), ask, slotActions(pass), pass.signal);
  if ('outcome' in end) return end.outcome; //                 window, blockers, approval, pre-flight, lock
  const cordoned = await cordon(pass, end.holder); //         labels, drain-delay, notify, record + cordon
  if ('outcome' in cordoned) return cordoned.outcome; //       denied by our own policy: slot back
  const halted = await haltedBeforeDrain(pass, cordoned.record, abortBeforeReboot); // wave halted: slot back
  if (halted) return halted;
  const drained = await drainAndDelay(pass, cordoned.record); // drain (PDB-aware), then --reboot-delay
  return verifyAndReboot(pass, drained); //                    re-verify (phaseOf), count, reboot
}

/** The pass's own view (BeforeLockView) of what the judgement reads. */
function viewOf(pass: Pass): BeforeLockView {
  const { window, blockers, clock, serverTime, lock, fleetLock } = pass.deps;
  const now = clock.now();
  return {
    config: pass.config,
    window,
    blockers,
    lock,
    fleetLock: fleetLock !== undefined,
    now,
    serverNow: serverTime?.at(now) ?? now,
    node: pass.node,
  };
}

/** What the agent does between the steps to a slot (runToSlot): its writes, and the slot itself. */
function slotActions(pass: Pass): SlotActions {
  return {
    release: () => pass.release(),
    // kured's timing: the taint goes on once nothing blocks the reboot, as the node waits for a slot
    beforeSlot: async () => {
      if (pass.config.taintTiming === 'unblocked') await pass.addTaint();
    },
    fleetLock: () => takeFleetLock(pass),
    slot: (meta) => pass.env.slot.acquire(meta, pass.signal),
  };
}
