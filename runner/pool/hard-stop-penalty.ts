import { createHash } from 'node:crypto';

/**
 * Slows down code, and tenants, that keep forcing hard stops. A hard stop (a call stuck in one long
 * built-in past its deadline, see runner-pool.ts) costs a whole worker: every call on it is re-run or
 * failed, and a new worker must start. Code that did it once will likely do it again, so after each hard
 * stop the same code *of the same tenant* (ExecuteRequest.tenant) is refused with RESOURCE_EXHAUSTED for
 * a cooldown that doubles with each further stop: 5 s, 10 s, 20 s, … up to 10 minutes; it starts again
 * from 5 s once that code has gone an hour without a hard stop. The tenant is counted too: from its
 * second hard stop within the hour, every call of that tenant is refused for the same doubling cooldown
 * (one behind), so that changing a comment each time does not get every call through to a hard stop.
 * Another tenant's code, even the very same text, is never refused for it.
 *
 * Keys are 64 bits of SHA-256 over the tenant and the code (a 32-bit FNV-1a of the code alone made one
 * tenant's untouched code collide with another's stuck code): {@link penaltyKeys}.
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
    hashes: new SharedArrayBuffer(SLOTS * 8),
    strikes: new SharedArrayBuffer(SLOTS * 4),
    times: new SharedArrayBuffer(SLOTS * 16),
    used: new SharedArrayBuffer(4),
  };
}

/** 64 bits of a SHA-256 digest, as two 32-bit words; never [0, 0] (that marks an empty slot). */
export type PenaltyKey = readonly [number, number];

/** The keys of one call: its code within its tenant, and its tenant. */
export interface PenaltyKeys {
  code: PenaltyKey;
  tenant: PenaltyKey;
}

function keyOf(kind: string, ...parts: string[]): PenaltyKey {
  const h = createHash('sha256').update(kind);
  for (const part of parts) h.update('\0').update(part);
  const digest = h.digest();
  const hi = digest.readInt32LE(0);
  const lo = digest.readInt32LE(4);
  return hi === 0 && lo === 0 ? [0, 1] : [hi, lo];
}

const tenantKeys = new Map<string, PenaltyKey>();

/** The penalty keys of a call of `tenant` ('' = the shared tenant) running `code`. */
export function penaltyKeys(tenant: string, code: string): PenaltyKeys {
  let t = tenantKeys.get(tenant);
  if (t === undefined) {
    if (tenantKeys.size >= 10_000) tenantKeys.clear();
    t = keyOf('tenant', tenant);
    tenantKeys.set(tenant, t);
  }
  return { code: keyOf('code', tenant, code), tenant: t };
}

/** Hard stops of one tenant forgiven before its calls are refused (a stuck call can be an accident). */
export const TENANT_FORGIVEN_STOPS = 1;

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

  /** Pool: a call forced a hard stop; counts it against its code and its tenant. */
  recordCall(keys: PenaltyKeys, at = now()): void {
    this.recordHardStop(keys.code, at);
    this.recordHardStop(keys.tenant, at, TENANT_FORGIVEN_STOPS);
  }

  /**
   * Pool: what `key` names forced a hard stop; returns its new cooldown in ms (0 while within the first
   * `forgiven` stops of the hour).
   */
  recordHardStop(key: PenaltyKey, at = now(), forgiven = 0): number {
    if (key[0] === 0 && key[1] === 0) return 0;
    let slot = this.find(key);
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
    const cooldown = strikes <= forgiven ? 0 : Math.min(MAX_COOLDOWN_MS, FIRST_COOLDOWN_MS * 2 ** (strikes - 1 - forgiven));
    Atomics.store(this.strikes, slot, strikes);
    this.times[2 * slot] = at + cooldown;
    this.times[2 * slot + 1] = at;
    Atomics.store(this.hashes, 2 * slot, key[0] | 0);
    Atomics.store(this.hashes, 2 * slot + 1, key[1] | 0);
    if (slot >= Atomics.load(this.used, 0)) Atomics.store(this.used, 0, slot + 1);
    return cooldown;
  }

  /** Worker: until when (epoch ms) what `key` names is refused; 0 when it may run. */
  refusedUntil(key: PenaltyKey, at = now()): number {
    const slot = this.find(key);
    if (slot < 0) return 0;
    const until = this.times[2 * slot]!;
    return until > at ? until : 0;
  }

  private find(key: PenaltyKey): number {
    const [hi, lo] = [key[0] | 0, key[1] | 0];
    const used = Atomics.load(this.used, 0);
    for (let i = 0; i < used; i++) if (Atomics.load(this.hashes, 2 * i) === hi && Atomics.load(this.hashes, 2 * i + 1) === lo) return i;
    return -1;
  }
}
