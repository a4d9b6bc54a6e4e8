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
 * - the C stack, `[stackBottom, stackTop)`, growing down: put back from the lowest the stack pointer went
 *   during the call (the build's low-water mark, stack-watermark.ts), less a margin for LLVM's 128-byte
 *   red zone, up to the top. Below that mark the call wrote nothing, so it is as the last restore left it.
 *   A `return 1` call touches a few KiB; before the mark, the whole 1.3 MiB QuickJS may use was zeroed.
 * - the heap up to the snapshot's break: copied (~180 KiB after the prelude).
 * - the heap a call added above that break, up to the break the call reached (read from the allocator's
 *   break word before it is restored): zeroed, so that no byte of it can reach the next call, and the
 *   allocator's assumption that fresh memory is zero holds. The break never moves down (no trim in
 *   this build), so the break the call ended with is its high-water mark.
 *
 * Parts that are zero in the snapshot are zero-filled, the rest copied. WebAssembly memory cannot
 * shrink: a module that grew past its recycle threshold is still replaced (wasm-modules.ts). Cost:
 * ~6 µs per call, mostly copying the static data and the heap.
 */
export class MemorySnapshot {
  private view: Uint8Array;
  /** The words of memory up to the allocator's break word, made again with {@link view}. */
  private words: Uint32Array;
  private readonly staticData: Uint8Array;
  private readonly stack: Run[];
  private readonly heap: Run[];
  private readonly stackBottom: number;
  private readonly stackTop: number;
  private readonly breakIndex: number;
  /** The allocator's break when the snapshot was taken: the end of the restored heap. */
  readonly breakAtSnapshot: number;

  private constructor(
    private readonly memory: WebAssembly.Memory,
    build: QuickJSBuild,
    breakAddress: number,
    private readonly stackLow: WebAssembly.Global,
  ) {
    this.view = new Uint8Array(memory.buffer);
    this.breakIndex = breakAddress >>> 2;
    this.words = new Uint32Array(memory.buffer, 0, this.breakIndex + 1);
    this.breakAtSnapshot = this.words[this.breakIndex]!;
    this.stackBottom = build.stackBottom;
    this.stackTop = build.stackTop;
    if (this.breakAtSnapshot < build.stackTop || this.breakAtSnapshot > this.view.length) {
      throw new Error(`the allocator's break (${this.breakAtSnapshot}) is not above the stack (${build.stackTop})`);
    }
    this.staticData = this.view.slice(0, build.stackBottom);
    // Below the lowest the stack pointer has been since the module was instantiated (less the red-zone
    // margin) nothing has written: that part of the 5 MiB stack is zero without reading it (reading it
    // page by page cost ~40 ms of page faults per module here). firstDifference() checks it like the rest.
    const low = stackLow.value >>> 0;
    const scanFrom = low > build.stackBottom + RED_ZONE_MARGIN && low <= build.stackTop ? alignDown(low - RED_ZONE_MARGIN, PAGE) : build.stackBottom;
    this.stack = [
      ...(scanFrom > build.stackBottom ? [{ from: build.stackBottom, to: scanFrom, bytes: undefined }] : []),
      ...runsOf(this.view, scanFrom, build.stackTop),
    ];
    this.heap = runsOf(this.view, build.stackTop, this.breakAtSnapshot);
    this.stackLow.value = build.stackTop;
  }

  /**
   * Takes the snapshot of a prepared realm. `breakAddress` is where the allocator keeps its break;
   * `stackLow` is the module's stack low-water mark (stack-watermark.ts).
   */
  static capture(memory: WebAssembly.Memory, build: QuickJSBuild, breakAddress: number, stackLow: WebAssembly.Global): MemorySnapshot {
    return new MemorySnapshot(memory, build, breakAddress, stackLow);
  }

  /** Bytes held by the snapshot (kept per module). */
  get sizeBytes(): number {
    return [...this.stack, ...this.heap].reduce((n, r) => n + (r.bytes?.length ?? 0), this.staticData.length);
  }

  /** Puts the memory back as it was when the snapshot was taken (see the class comment). */
  restore(): void {
    const view = this.currentView();
    let reached = this.currentBreak();
    // A call that corrupted static data may have overwritten the break itself: then clear everything above.
    if (reached < this.breakAtSnapshot || reached > view.length) reached = view.length;
    const low = this.stackLow.value >>> 0;
    const from = low > this.stackBottom + RED_ZONE_MARGIN && low <= this.stackTop ? alignDown(low - RED_ZONE_MARGIN, PAGE) : this.stackBottom;
    putBack(view, this.stack, from);
    view.set(this.staticData, 0);
    putBack(view, this.heap, 0);
    view.fill(0, this.breakAtSnapshot, reached);
    this.stackLow.value = this.stackTop;
  }

  /**
   * Saves what a parked call holds in memory (see parked-calls in run-sandbox.ts): the pages of static
   * data and heap that differ from the snapshot, up to the break the call reached. The C stack is not
   * saved: a call parks only between host calls, when no WASM frame is live and the stack pointer is back
   * at the top, so everything on the stack is dead. `undefined` when the break word is not believable (the
   * call corrupted its static data): such a call cannot be resumed.
   */
  saveCall(): CallImage | undefined {
    const view = this.currentView();
    const reached = this.currentBreak();
    if (reached < this.breakAtSnapshot || reached > view.length) return undefined;
    const mem = Buffer.from(view.buffer, view.byteOffset, view.length);
    const ranges: number[] = [];
    const same = (at: number, end: number, bytes: Uint8Array | undefined, bytesFrom: number): boolean =>
      bytes ? mem.compare(bytes, at - bytesFrom, end - bytesFrom, at, end) === 0 : mem.compare(ZERO_PAGE_BUFFER, 0, end - at, at, end) === 0;
    // Whole pages first (most are untouched); within a page that differs, SAVE_CHUNK pieces: a call
    // touches a few bytes of many pages, and saving 512-byte pieces made an image a third of the size.
    const differs = (from: number, to: number, bytes: Uint8Array | undefined, bytesFrom: number): void => {
      for (let page = from; page < to; page += PAGE) {
        const pageEnd = Math.min(to, page + PAGE);
        if (same(page, pageEnd, bytes, bytesFrom)) continue;
        for (let at = page; at < pageEnd; at += SAVE_CHUNK) {
          const end = Math.min(pageEnd, at + SAVE_CHUNK);
          if (same(at, end, bytes, bytesFrom)) continue;
          // Adjacent pieces make one range.
          if (ranges.length > 0 && ranges[ranges.length - 1] === at) ranges[ranges.length - 1] = end;
          else ranges.push(at, end);
        }
      }
    };
    differs(0, this.stackBottom, this.staticData, 0);
    for (const run of this.heap) differs(run.from, run.to, run.bytes, run.from);
    differs(this.breakAtSnapshot, reached, undefined, 0);
    let size = 0;
    for (let i = 0; i < ranges.length; i += 2) size += ranges[i + 1]! - ranges[i]!;
    const backing = imageBuffers.take(size);
    const bytes = backing.subarray(0, size);
    let at = 0;
    for (let i = 0; i < ranges.length; i += 2) {
      bytes.set(view.subarray(ranges[i]!, ranges[i + 1]!), at);
      at += ranges[i + 1]! - ranges[i]!;
    }
    return { ranges: Uint32Array.from(ranges), bytes, heapEnd: reached, backing };
  }

  /** Puts back the snapshot and then a parked call's pages over it: the memory is the call's again. */
  restoreCall(image: CallImage): void {
    this.restore();
    const view = this.currentView();
    if (image.heapEnd > view.length) throw new Error(`a parked call's heap (${image.heapEnd} bytes) is past this module's memory (${view.length})`);
    const { ranges, bytes } = image;
    let at = 0;
    for (let i = 0; i < ranges.length; i += 2) {
      const n = ranges[i + 1]! - ranges[i]!;
      view.set(bytes.subarray(at, at + n), ranges[i]!);
      at += n;
    }
  }

  /** The allocator's break now: the end of the heap the call in memory has used (it never moves down). */
  currentBreak(): number {
    this.currentView();
    return this.words[this.breakIndex]!;
  }

  /**
   * Where the memory differs from the snapshot, or `undefined` when it is byte-identical (everything
   * above the break must be zero). For tests: it reads all of memory.
   */
  firstDifference(): string | undefined {
    const view = this.currentView();
    for (let i = 0; i < this.staticData.length; i++) if (view[i] !== this.staticData[i]) return `byte ${i} differs`;
    for (const run of [...this.stack, ...this.heap, { from: this.breakAtSnapshot, to: view.length, bytes: undefined }]) {
      for (let i = run.from; i < run.to; i++) if (view[i] !== (run.bytes ? run.bytes[i - run.from] : 0)) return `byte ${i} differs`;
    }
    return undefined;
  }

  private currentView(): Uint8Array {
    // Growing the memory detaches the old buffer (and the word view on it).
    if (this.view.buffer !== this.memory.buffer) {
      this.view = new Uint8Array(this.memory.buffer);
      this.words = new Uint32Array(this.memory.buffer, 0, this.breakIndex + 1);
    }
    return this.view;
  }
}

/**
 * What a parked call holds in a module's memory beyond the snapshot: `[from, to)` address pairs and
 * their bytes, one after the other; the heap it had reached (MemorySnapshot.saveCall).
 */
export interface CallImage {
  readonly ranges: Uint32Array;
  readonly bytes: Uint8Array;
  readonly heapEnd: number;
  /** The pooled buffer `bytes` is a view of: given back with {@link releaseCallImage}. */
  readonly backing: Buffer;
}

/**
 * Buffers for parked calls' pages, reused: a runner under load parks and resumes thousands of calls a
 * second, and a new 35–150 KiB ArrayBuffer for each made V8 count that much external memory each time,
 * which it answers with full garbage collections. Sizes are rounded up to {@link IMAGE_UNIT}; what is given
 * back is kept for the next image of its size, up to {@link MAX_POOLED_BYTES} in all.
 */
class ImageBuffers {
  readonly #free = new Map<number, Buffer[]>();
  #pooledBytes = 0;

  take(size: number): Buffer {
    const capacity = Math.max(IMAGE_UNIT, Math.ceil(size / IMAGE_UNIT) * IMAGE_UNIT);
    const reused = this.#free.get(capacity)?.pop();
    if (reused) {
      this.#pooledBytes -= capacity;
      return reused;
    }
    // Every byte an image uses is written by saveCall: no need to zero it first.
    return Buffer.allocUnsafeSlow(capacity);
  }

  give(buffer: Buffer): void {
    if (this.#pooledBytes + buffer.length > MAX_POOLED_BYTES) return;
    let list = this.#free.get(buffer.length);
    if (list === undefined) this.#free.set(buffer.length, (list = []));
    list.push(buffer);
    this.#pooledBytes += buffer.length;
  }
}

const IMAGE_UNIT = 16 * 1024;
/** Buffers kept for reuse per thread at most (what a burst of parked calls leaves behind beyond it is freed). */
const MAX_POOLED_BYTES = 64 * 1024 * 1024;
const imageBuffers = new ImageBuffers();

/** Gives a parked call's pages back for reuse, once they are restored or the call is gone. */
export function releaseCallImage(image: CallImage): void {
  imageBuffers.give(image.backing);
}

/** A stretch of the snapshot: its bytes, or `undefined` where it is all zero. */
interface Run {
  from: number;
  to: number;
  bytes: Uint8Array | undefined;
}

/** Puts the runs back from address `from` on (the runs are in address order). */
function putBack(view: Uint8Array, runs: readonly Run[], from: number): void {
  for (const run of runs) {
    if (run.to <= from) continue;
    const start = Math.max(from, run.from);
    if (run.bytes) view.set(start === run.from ? run.bytes : run.bytes.subarray(start - run.from), start);
    else view.fill(0, start, run.to);
  }
}

/** Splits `[from, to)` into runs that are zero in the snapshot (filled) and runs that are copied. */
function runsOf(view: Uint8Array, from: number, to: number): Run[] {
  const runs: Run[] = [];
  const add = (start: number, end: number, zero: boolean) => {
    if (end > start) runs.push({ from: start, to: end, bytes: zero ? undefined : view.slice(start, end) });
  };
  let runStart = from;
  let runZero = isZero(view, from, Math.min(to, from + PAGE));
  for (let at = from; at < to; at += PAGE) {
    const zero = isZero(view, at, Math.min(to, at + PAGE));
    if (zero !== runZero) {
      add(runStart, at, runZero);
      runStart = at;
      runZero = zero;
    }
  }
  add(runStart, to, runZero);
  return runs;
}

const PAGE = 4096;
/** The unit a parked call's memory is compared and saved in (see saveCall). */
const SAVE_CHUNK = 512;
/** LLVM's WebAssembly red zone is 128 bytes; a page of margin costs nothing and keeps the arithmetic simple. */
const RED_ZONE_MARGIN = PAGE;

function alignDown(n: number, to: number): number {
  return Math.floor(n / to) * to;
}

const ZERO_PAGE = new Uint8Array(PAGE);
const ZERO_PAGE_BUFFER = Buffer.from(ZERO_PAGE.buffer);

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
 *
 * Once per thread. Only what the probe can write is saved and put back: the static data (the allocator's
 * state), the top of the C stack (the probe's own frames, bounded by the stack low-water mark) and the
 * start of the heap; above the pristine break the memory is zero and is zeroed again up to the break the
 * probe reached. A copy of the whole memory instead (16 MiB) cost ~100 ms of page faults per worker start.
 */
export function locateAllocatorBreak(
  memory: WebAssembly.Memory,
  build: QuickJSBuild,
  stackLow: WebAssembly.Global,
  malloc: (n: number) => number,
  free: (p: number) => void,
): { address: number; heapBase: number } {
  const stackFrom = build.stackTop - PROBE_STACK_BYTES;
  const heapTo = Math.min(memory.buffer.byteLength, build.stackTop + PROBE_HEAP_BYTES);
  const staticBefore = new Uint8Array(memory.buffer, 0, build.stackBottom).slice();
  const topBefore = new Uint8Array(memory.buffer, stackFrom, heapTo - stackFrom).slice();
  const beforeWords = new Uint32Array(staticBefore.buffer, 0, build.stackBottom >>> 2);
  // The low-water mark measures the probe alone, then gets back what it held (how low the module's
  // start-up went: the snapshot relies on it, see the constructor of MemorySnapshot).
  const lowBefore = stackLow.value;
  stackLow.value = build.stackTop;
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
  const reached = address < 0 ? memory.buffer.byteLength : Math.min(after[address >>> 2]!, memory.buffer.byteLength);
  free(block);
  const heapBase = address < 0 ? -1 : beforeWords[address >>> 2]!;
  const lowest = stackLow.value >>> 0;
  stackLow.value = lowBefore;
  const view = new Uint8Array(memory.buffer);
  view.set(staticBefore, 0);
  view.set(topBefore, stackFrom);
  view.fill(0, heapTo, reached);
  if (address < 0) throw new Error('could not find the allocator break in the QuickJS module');
  // Outside these bounds the probe may have written what was not saved: the layout is not the one assumed.
  if (heapBase > heapTo || lowest < stackFrom) throw new Error('the QuickJS module does not have the expected memory layout (allocator probe)');
  return { address, heapBase };
}

const PROBE_BYTES = 1024 * 1024;
/** The probe's frames (malloc, sbrk, free) use well under this much of the C stack. */
const PROBE_STACK_BYTES = 64 * 1024;
/** A pristine module's heap (emscripten's own start-up allocations) ends well below this, above the stack. */
const PROBE_HEAP_BYTES = 256 * 1024;
