import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten';
import { GuestAllocationError } from './guest-allocation-error.js';
import { locateAllocatorBreak } from './memory-snapshot.js';
import { loadQuickJSBuild } from './quickjs-build.js';
import type { SnapshotRealm } from './snapshot-realm.js';

/**
 * QuickJS WebAssembly modules with a hard memory cap, one call at a time per module, each holding one
 * prepared realm that every call starts from (snapshot-realm.ts).
 *
 * Why a module per call: `setMemoryLimit` does not cap memory in quickjs-emscripten 0.32 (it charges
 * each allocation only its overhead; upstream #271), so the cap is the `maximum` of the module's
 * `WebAssembly.Memory`, and that cap covers everything in the module. Why recycling: WebAssembly memory
 * never shrinks, so a module whose memory grew past `recycleAboveBytes` is dropped (the next call gets a
 * new one, ~20 ms) instead of holding its high-water mark forever.
 */

const PAGE = 65536;
/** The release build's initial memory: 16 MiB (its data, the 5 MiB C stack and the first heap). */
const INITIAL_PAGES = 256;
/** What the module itself needs beyond the heap the call may use (measured: ~6 MiB of a 16 MiB start). */
export const MODULE_RESERVE_BYTES = 8 * 1024 * 1024;

/** Idle modules are kept for at most this many distinct memory caps (the most recently used). */
const MAX_IDLE_CAP_SIZES = 2;

/** The parts of emscripten's Module object the sandbox uses. */
interface EmscriptenAllocator {
  _malloc(n: number): number;
  _free(p: number): void;
}

export interface CappedModule {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly capBytes: number;
  /** Where the module's allocator keeps its break (see memory-snapshot.ts). */
  readonly breakAddress: number;
  /** The lowest the C stack pointer went since the last restore (stack-watermark.ts). */
  readonly stackLow: WebAssembly.Global;
  /** Set when the module may be corrupt (a WASM trap, a failed copy into it): it is never reused. */
  broken: boolean;
  /** Set when the module asked for memory beyond its cap; cleared by the next call (see createCappedModule). */
  exhausted: boolean;
  calls: number;
  /** The realm every call on this module starts from, prepared once (lazily, or while idle). */
  realm?: SnapshotRealm | undefined;
  /** True while a call holds the module. */
  inUse: boolean;
}

export interface WasmModulePoolOptions {
  /** Idle modules kept per cap size. */
  maxIdlePerCap: number;
  /** A module whose memory grew beyond this many bytes is not reused. */
  recycleAboveBytes: number;
  /** A module is retired after this many calls (bounds any slow leak on the host side of the module). */
  maxCallsPerModule: number;
}

export function capBytesFor(memoryBytes: number): number {
  const want = Math.max(INITIAL_PAGES * PAGE, memoryBytes + MODULE_RESERVE_BYTES);
  return Math.ceil(want / PAGE) * PAGE;
}

/** The allocator break's address is the same in every instance of the build: found once per thread. */
let allocatorBreak: { address: number; heapBase: number } | undefined;

/**
 * Instantiates the pinned build on a memory with a fixed maximum. Every copy the host makes into the
 * module goes through `_malloc` (quickjs-emscripten's string, buffer and argument helpers), and the
 * library writes to the address it returns without checking it: a failed allocation would write over
 * the module's static data at address 0. Here a failed allocation throws before the write and marks
 * the module broken.
 */
export async function createCappedModule(capBytes: number): Promise<CappedModule> {
  const build = loadQuickJSBuild();
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: capBytes / PAGE });
  let em: EmscriptenAllocator | undefined;
  let instance: WebAssembly.Instance | undefined;
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(RELEASE_SYNC, {
      wasmMemory: memory,
      emscriptenModule: {
        // Emscripten's hook for instantiating the module: the compiled build (with its stack low-water
        // mark) is instantiated here, so that the mark's export is at hand.
        instantiateWasm(imports: WebAssembly.Imports, receive: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void) {
          instance = new WebAssembly.Instance(build.wasmModule, imports);
          receive(instance, build.wasmModule);
          return instance.exports;
        },
        // Called on emscripten's Module object once it is ready: the only public way to reach `_malloc`.
        onRuntimeInitialized(this: EmscriptenAllocator) {
          em = this;
        },
      } as never,
    }),
  );
  if (!em || typeof em._malloc !== 'function') throw new Error('the QuickJS module did not expose its allocator');
  const stackLow = instance?.exports[build.stackLowExport];
  if (!(stackLow instanceof WebAssembly.Global)) throw new Error('the QuickJS module has no stack low-water mark');
  const alloc = em;
  allocatorBreak ??= locateAllocatorBreak(
    memory,
    build,
    stackLow,
    (n) => alloc._malloc(n),
    (p) => alloc._free(p),
  );
  const pristineBreak = new Uint32Array(memory.buffer)[allocatorBreak.address >>> 2];
  if (pristineBreak !== allocatorBreak.heapBase) throw new Error('the QuickJS module does not have the expected memory layout');

  const cm: CappedModule = {
    module,
    memory,
    capBytes,
    breakAddress: allocatorBreak.address,
    stackLow,
    broken: false,
    exhausted: false,
    calls: 0,
    inUse: false,
  };
  refuseGrowthPastCap(cm);
  const malloc = alloc._malloc.bind(alloc);
  alloc._malloc = (n: number) => {
    const p = malloc(n);
    if (p === 0) {
      cm.broken = true;
      throw new GuestAllocationError(n);
    }
    return p;
  };
  return cm;
}

/**
 * At its cap, QuickJS keeps asking for memory: emscripten tries `grow` four times per request, and
 * some of QuickJS's internal allocations (its job queue among them) fail silently and are retried, so a
 * call at the cap could crawl on for seconds (170k failed grows, ~8 µs each, were seen in one call).
 * Here a request past the cap is refused at once and noted: the interrupt handler then ends the call
 * as over its memory limit.
 */
function refuseGrowthPastCap(cm: CappedModule): void {
  const memory = cm.memory;
  const grow = memory.grow.bind(memory);
  const refused = new RangeError('the sandbox memory is at its cap');
  memory.grow = (pages: number) => {
    if (memory.buffer.byteLength + pages * PAGE > cm.capBytes) {
      cm.exhausted = true;
      throw refused;
    }
    return grow(pages);
  };
}

export class WasmModulePool {
  private readonly idle = new Map<number, CappedModule[]>();
  created = 0;
  retired = 0;

  constructor(private readonly options: WasmModulePoolOptions) {}

  async acquire(memoryBytes: number): Promise<CappedModule> {
    const capBytes = capBytesFor(memoryBytes);
    const free = this.idle.get(capBytes);
    const reused = free?.pop();
    if (reused) {
      reused.inUse = true;
      return reused;
    }
    const cm = await createCappedModule(capBytes);
    this.created++;
    cm.inUse = true;
    return cm;
  }

  /** Returns the module after a call; true when it is kept for reuse. */
  release(m: CappedModule): boolean {
    m.inUse = false;
    m.calls++;
    if (m.broken || m.memory.buffer.byteLength > this.options.recycleAboveBytes || m.calls >= this.options.maxCallsPerModule) {
      this.retired++;
      return false; // dropped: GC frees its memory once nothing references it
    }
    const free = this.idle.get(m.capBytes) ?? [];
    // Most recently used cap size last; callers that vary memoryBytes would otherwise leave an idle
    // module (16+ MiB each) behind for every size they ever asked for.
    this.idle.delete(m.capBytes);
    this.idle.set(m.capBytes, free);
    for (const [cap, modules] of this.idle) {
      if (this.idle.size <= MAX_IDLE_CAP_SIZES) break;
      this.retired += modules.length;
      this.idle.delete(cap);
    }
    if (free.length < this.options.maxIdlePerCap) {
      free.push(m);
      return true;
    }
    this.retired++;
    return false;
  }
}
