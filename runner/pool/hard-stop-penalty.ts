/**
 * Slows down code that keeps forcing hard stops. A hard stop (a call stuck in one long built-in past
 * its deadline, see runner-pool.ts) costs a whole worker: every call on it is re-run or failed, and a
 * new worker must start. Code that did it once will likely do it again, so after each hard stop the same
 * code (by a hash of its text) is refused with RESOURCE_EXHAUSTED for a cooldown that doubles with each
 * further stop: 5 s, 10 s, 20 s, … up to 10 minutes; it starts again from 5 s once that code has gone
 * an hour without a hard stop. Other code is not affected.
 *
 * The table lives in shared memory: the pool (main thread) writes it when it stops a worker, the
 * workers read it once they know a call's code. It holds SLOTS entries; when it is full, the entry that
 * expired longest ago is reused.
 */
const SLOTS = 256;
export const FIRST_COOLDOWN_MS = 5_000;
export const MAX_COOLDOWN_MS = 10 * 60_000;
const FORGET_AFTER_MS = 60 * 60_000;

/** Shared memory of the table (Piscina `workerData`). */
export interface PenaltyTableMemory {
  hashes: SharedArrayBuffer;
  strikes: SharedArrayBuffer;
  /** Per slot: until when the code is refused, and when its last hard stop was (epoch ms). */
  times: SharedArrayBuffer;
  /** How many slots have ever been used (lookups scan only those: usually none). */
  used: SharedArrayBuffer;
}

const now = (): number => performance.timeOrigin + performance.now();

export function createPenaltyTableMemory(): PenaltyTableMemory {
  return {
    hashes: new SharedArrayBuffer(SLOTS * 4),
    strikes: new SharedArrayBuffer(SLOTS * 4),
    times: new SharedArrayBuffer(SLOTS * 16),
    used: new SharedArrayBuffer(4),
  };
}

/** A 32-bit FNV-1a hash of the code's UTF-16 units, never 0 (0 marks an empty slot / unknown code). */
export function codeHash(code: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < code.length; i++) {
    h ^= code.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h === 0 ? 1 : h;
}

export class PenaltyTable {
  private readonly hashes: Int32Array;
  private readonly strikes: Int32Array;
  private readonly times: Float64Array;
  private readonly used: Int32Array;

  constructor(memory: PenaltyTableMemory) {
    this.used = new Int32Array(memory.used);
    this.hashes = new Int32Array(memory.hashes);
    this.strikes = new Int32Array(memory.strikes);
    this.times = new Float64Array(memory.times);
  }

  /** Pool: the code with this hash forced a hard stop; returns its new cooldown in ms. */
  recordHardStop(hash: number, at = now()): number {
    if (hash === 0) return 0;
    let slot = this.find(hash);
    if (slot < 0) {
      const used = Atomics.load(this.used, 0);
      if (used < SLOTS) {
        slot = used;
      } else {
        slot = 0;
        for (let i = 1; i < SLOTS; i++) if (this.times[2 * i + 1]! < this.times[2 * slot + 1]!) slot = i;
      }
      Atomics.store(this.strikes, slot, 0);
      this.times[2 * slot + 1] = 0;
    }
    const lastStop = this.times[2 * slot + 1]!;
    const strikes = at - lastStop > FORGET_AFTER_MS ? 1 : Atomics.load(this.strikes, slot) + 1;
    const cooldown = Math.min(MAX_COOLDOWN_MS, FIRST_COOLDOWN_MS * 2 ** (strikes - 1));
    Atomics.store(this.strikes, slot, strikes);
    this.times[2 * slot] = at + cooldown;
    this.times[2 * slot + 1] = at;
    Atomics.store(this.hashes, slot, hash | 0);
    if (slot >= Atomics.load(this.used, 0)) Atomics.store(this.used, 0, slot + 1);
    return cooldown;
  }

  /** Worker: until when (epoch ms) code with this hash is refused; 0 when it may run. */
  refusedUntil(hash: number, at = now()): number {
    const slot = this.find(hash);
    if (slot < 0) return 0;
    const until = this.times[2 * slot]!;
    return until > at ? until : 0;
  }

  private find(hash: number): number {
    const h = hash | 0;
    const used = Atomics.load(this.used, 0);
    for (let i = 0; i < used; i++) if (Atomics.load(this.hashes, i) === h) return i;
    return -1;
  }
}
