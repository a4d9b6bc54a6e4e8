/**
 * The cancel flags of the pool's calls (cancel-flag.ts), as slots of one SharedArrayBuffer made at start
 * and shared with every worker: a call takes a free slot for its life and names it on the lane, so no
 * SharedArrayBuffer is made or cloned per call. A placement number (cancel-flag.ts) guards against a
 * worker acting on a slot that has since been given to another call.
 */
import { FLAG_BYTES } from './cancel-flag.js';

/** Slots are a multiple of 64 bytes apart, so two calls' flags never share a cache line. */
const SLOT_BYTES = Math.ceil(FLAG_BYTES / 64) * 64;

export function createFlagTableMemory(slots: number): SharedArrayBuffer {
  return new SharedArrayBuffer(slots * SLOT_BYTES);
}

/** Views of a flag table, made once per slot; both the pool and the workers read slots through one. */
export class FlagViews {
  private readonly views: Int32Array[] = [];

  constructor(private readonly memory: SharedArrayBuffer) {}

  get slots(): number {
    return this.memory.byteLength / SLOT_BYTES;
  }

  of(slot: number): Int32Array {
    let view = this.views[slot];
    if (!view) {
      view = new Int32Array(this.memory, slot * SLOT_BYTES, FLAG_BYTES / 4);
      this.views[slot] = view;
    }
    return view;
  }
}

/** The pool's side: hands out free slots, cleared. */
export class FlagTable {
  private readonly views: FlagViews;
  private readonly free: number[] = [];

  constructor(memory: SharedArrayBuffer) {
    this.views = new FlagViews(memory);
    for (let slot = this.views.slots - 1; slot >= 0; slot--) this.free.push(slot);
  }

  /** A cleared flag and its slot, or `undefined` when every slot is taken. */
  take(): { slot: number; flag: Int32Array } | undefined {
    const slot = this.free.pop();
    if (slot === undefined) return undefined;
    const flag = this.views.of(slot);
    flag.fill(0);
    return { slot, flag };
  }

  give(slot: number): void {
    this.free.push(slot);
  }
}
