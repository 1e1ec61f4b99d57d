// DESIGN §1 from a node that needs its reboot to the reboot request, read top-down: each step returns
// data, an outcome that ends the pass or what the next step needs. Nothing is kept between steps but
// what they return and the node as last read (Pass.node).
import type { Outcome } from '../outcome.js';
import { detect, takeSlot, taint, windowAndBlockers } from './before-lock.js';
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
  const held = await windowAndBlockers(pass, need.verdict, unproven); // window, blockers, approval
  if (held !== undefined) return held;
  const slot = await takeSlot(pass, unproven); //              the PDB pre-flight, then the lock
  if ('outcome' in slot) return slot.outcome;
  const cordoned = await cordon(pass, slot.holder); //         labels, drain-delay, notify, record + cordon
  if ('outcome' in cordoned) return cordoned.outcome; //       denied by our own policy: slot back
  const halted = await haltedBeforeDrain(pass, cordoned.record, abortBeforeReboot); // wave halted: slot back
  if (halted) return halted;
  const drained = await drainAndDelay(pass, cordoned.record); // drain (PDB-aware), then --reboot-delay
  return verifyAndReboot(pass, drained); //                    re-verify (phaseOf), count, reboot
}
