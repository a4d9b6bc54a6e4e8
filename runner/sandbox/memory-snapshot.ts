import type { QuickJSBuild } from './quickjs-build.js';

/**
 * A copy of the parts of a QuickJS module's linear memory that a call can change, taken once the realm
 * is prepared, and put back before every call: the call then starts from a byte-identical, never-used
 * realm (the pre-initialisation technique of Wizer and V8 startup snapshots). Everything a QuickJS
 * runtime is lives in that memory; the JS-side objects of quickjs-emscripten only hold pointers into it.
 *
 * What a call can change, and how each part is put back (addresses from quickjs-build.ts):
 *
 * - static data and bss, `[0, stackBottom)`: the C globals, the allocator's state and its break. Copied
 *   back whole (~90 KiB), so even a call that wrote through a null pointer leaves nothing behind.
 * - the top of the C stack, `[stackTop - stackWindow, stackTop)`: QuickJS's own stack limit keeps a call
 *   inside this window; below it the stack is never used, and a guard band there is checked (a dirty
 *   guard zeroes the whole stack region). The parts that are zero in the snapshot are zeroed, the rest copied.
 * - the heap up to the snapshot's break: copied (~100 KiB after the prelude).
 * - the heap a call added above that break, up to the break the call reached (read from the allocator's
 *   break word before it is restored): zeroed, so that no byte of it can reach the next call, and the
 *   allocator's assumption that fresh memory is zero holds. The break never moves down (no trim in
 *   this build), so the break the call ended with is its high-water mark.
 *
 * WebAssembly memory cannot shrink: a module that grew past its recycle threshold is still replaced
 * (wasm-modules.ts). Cost: ~15–25 µs per call, dominated by zeroing the stack window.
 */
export class MemorySnapshot {
  private view: Uint8Array;
  private readonly copies: Array<{ at: number; bytes: Uint8Array }> = [];
  private readonly zeroes: Array<{ from: number; to: number }> = [];
  private readonly guardFrom: number;
  private readonly guardTo: number;
  private readonly stackBottom: number;
  private readonly breakIndex: number;
  /** The allocator's break when the snapshot was taken: the end of the restored heap. */
  readonly breakAtSnapshot: number;

  private constructor(
    private readonly memory: WebAssembly.Memory,
    build: QuickJSBuild,
    breakAddress: number,
    stackWindowBytes: number,
  ) {
    this.view = new Uint8Array(memory.buffer);
    const words = new Uint32Array(memory.buffer);
    this.breakIndex = breakAddress >>> 2;
    this.breakAtSnapshot = words[this.breakIndex]!;
    this.stackBottom = build.stackBottom;
    const windowLow = Math.max(build.stackBottom, alignDown(build.stackTop - stackWindowBytes, PAGE));
    this.guardTo = windowLow;
    this.guardFrom = Math.max(build.stackBottom, windowLow - GUARD_BYTES);
    if (this.breakAtSnapshot < build.stackTop || this.breakAtSnapshot > this.view.length) {
      throw new Error(`the allocator's break (${this.breakAtSnapshot}) is not above the stack (${build.stackTop})`);
    }
    if (!isZero(this.view, this.guardFrom, this.guardTo)) {
      throw new Error('the stack below the snapshot window is in use: the window is too small');
    }
    this.copies.push({ at: 0, bytes: this.view.slice(0, build.stackBottom) });
    this.splitIntoRuns(windowLow, this.breakAtSnapshot);
  }

  /** Takes the snapshot of a prepared realm. `breakAddress` is where the allocator keeps its break. */
  static capture(memory: WebAssembly.Memory, build: QuickJSBuild, breakAddress: number, stackWindowBytes: number): MemorySnapshot {
    return new MemorySnapshot(memory, build, breakAddress, stackWindowBytes);
  }

  /** Bytes held by the snapshot (kept per module). */
  get sizeBytes(): number {
    return this.copies.reduce((n, c) => n + c.bytes.length, 0);
  }

  /** Puts the memory back as it was when the snapshot was taken (see the class comment). */
  restore(): void {
    const view = this.currentView();
    const words = new Uint32Array(view.buffer, 0, this.breakIndex + 1);
    let reached = words[this.breakIndex]!;
    // A call that corrupted static data may have overwritten the break itself: then clear everything above.
    if (reached < this.breakAtSnapshot || reached > view.length) reached = view.length;
    if (!isZero(view, this.guardFrom, this.guardTo)) view.fill(0, this.stackBottom, this.guardTo);
    for (const z of this.zeroes) view.fill(0, z.from, z.to);
    for (const c of this.copies) view.set(c.bytes, c.at);
    view.fill(0, this.breakAtSnapshot, reached);
  }

  /**
   * Where the memory differs from the snapshot, or `undefined` when it is byte-identical (the stack
   * below the window and everything above the break must be zero). For tests: it reads all of memory.
   */
  firstDifference(): string | undefined {
    const view = this.currentView();
    for (const c of this.copies) {
      for (let i = 0; i < c.bytes.length; i++) if (view[c.at + i] !== c.bytes[i]) return `byte ${c.at + i} differs`;
    }
    for (const z of [...this.zeroes, { from: this.stackBottom, to: this.guardTo }, { from: this.breakAtSnapshot, to: view.length }]) {
      for (let i = z.from; i < z.to; i++) if (view[i] !== 0) return `byte ${i} is not zero`;
    }
    return undefined;
  }

  private currentView(): Uint8Array {
    // Growing the memory detaches the old buffer.
    if (this.view.buffer !== this.memory.buffer) this.view = new Uint8Array(this.memory.buffer);
    return this.view;
  }

  /** Splits `[from, to)` into runs that are zero in the snapshot (filled) and runs that are copied. */
  private splitIntoRuns(from: number, to: number): void {
    let runStart = from;
    let runZero = isZero(this.view, from, Math.min(to, from + PAGE));
    for (let at = from; at < to; at += PAGE) {
      const end = Math.min(to, at + PAGE);
      const zero = isZero(this.view, at, end);
      if (zero !== runZero) {
        this.addRun(runStart, at, runZero);
        runStart = at;
        runZero = zero;
      }
    }
    this.addRun(runStart, to, runZero);
  }

  private addRun(from: number, to: number, zero: boolean): void {
    if (to <= from) return;
    if (zero) this.zeroes.push({ from, to });
    else this.copies.push({ at: from, bytes: this.view.slice(from, to) });
  }
}

const PAGE = 4096;
const GUARD_BYTES = 64 * 1024;

function alignDown(n: number, to: number): number {
  return Math.floor(n / to) * to;
}

const ZERO_PAGE = new Uint8Array(GUARD_BYTES);

function isZero(view: Uint8Array, from: number, to: number): boolean {
  for (let at = from; at < to; at += ZERO_PAGE.length) {
    const n = Math.min(ZERO_PAGE.length, to - at);
    if (Buffer.compare(Buffer.from(view.buffer, view.byteOffset + at, n), Buffer.from(ZERO_PAGE.buffer, 0, n)) !== 0) return false;
  }
  return true;
}

/**
 * Finds the word where the allocator keeps its break (emscripten's sbrk pointer), on a module nothing
 * has run in yet: a large allocation moves exactly that word past the block it returned. The module is
 * left as it was (the probe is undone). Returns the word's address and its pristine value, the heap base.
 */
export function locateAllocatorBreak(
  memory: WebAssembly.Memory,
  build: QuickJSBuild,
  malloc: (n: number) => number,
  free: (p: number) => void,
): { address: number; heapBase: number } {
  // Once per thread: the whole memory is copied so that the probe can be undone exactly.
  const before = new Uint8Array(memory.buffer).slice();
  const beforeWords = new Uint32Array(before.buffer, 0, build.stackBottom >>> 2);
  const block = malloc(PROBE_BYTES);
  if (block === 0) throw new Error('the allocator probe could not allocate');
  const after = new Uint32Array(memory.buffer, 0, beforeWords.length);
  let address = -1;
  for (let i = 0; i < beforeWords.length; i++) {
    const was = beforeWords[i]!;
    const now = after[i]!;
    // The break starts above the stack and ends past the probe's block; the allocator's other
    // pointers into the heap (its top chunk) end below it.
    if (was >= build.stackTop && now > was && now >= block + PROBE_BYTES && now <= memory.buffer.byteLength && (address < 0 || now > after[address >>> 2]!))
      address = i * 4;
  }
  free(block);
  const view = new Uint8Array(memory.buffer);
  view.set(before, 0);
  view.fill(0, before.length);
  if (address < 0) throw new Error('could not find the allocator break in the QuickJS module');
  return { address, heapBase: beforeWords[address >>> 2]! };
}

const PROBE_BYTES = 1024 * 1024;
