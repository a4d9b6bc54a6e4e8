import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten';
import { GuestAllocationError } from './guest-allocation-error.js';
import { locateAllocatorBreak } from './memory-snapshot.js';
import { loadQuickJSBuild } from './quickjs-build.js';
import type { SnapshotRealm } from './snapshot-realm.js';

/**
 * QuickJS WebAssembly modules with a hard memory cap, one computing call at a time per module, each
 * holding one prepared realm that every call starts from (snapshot-realm.ts).
 *
 * Why a module per cap: `setMemoryLimit` does not cap memory in quickjs-emscripten 0.32 (it charges
 * each allocation only its overhead; upstream #271), so the cap is the `maximum` of the module's
 * `WebAssembly.Memory`, and that cap covers everything in the module. Why recycling: WebAssembly memory
 * never shrinks, so a module whose memory grew past `recycleAboveBytes` is dropped (the next call gets a
 * new one, ~20 ms) instead of holding its high-water mark forever.
 */

const PAGE = 65536;
/** The release build's initial memory: 16 MiB (its data, the 5 MiB C stack and the first heap). */
const INITIAL_PAGES = 256;
/** A WebAssembly memory page. */
export const WASM_PAGE = PAGE;
/** A module's memory before any call grew it. */
export const INITIAL_MEMORY_BYTES = INITIAL_PAGES * PAGE;
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
  /** Calls started on the module and not ended (running or parked on it). */
  holders: number;
  /** No new call is placed on it; dropped once its last call ends (see WasmModulePool). */
  retiring: boolean;
}

export interface WasmModulePoolOptions {
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
    holders: 0,
    retiring: false,
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

/**
 * The modules of one thread: one per memory cap, shared by every call of that cap. A call holds its
 * module only while it computes; while it waits for host work it parks (snapshot-realm.ts), so one module
 * serves any number of calls in flight, one computing at a time — which is all a thread can do. A module
 * that grew past `recycleAboveBytes`, broke, or served `maxCallsPerModule` calls is retired: new calls get a
 * new one, and the calls parked on the old one finish there before it is dropped.
 */
export class WasmModulePool {
  /** The module each cap's calls share, the most recently used cap last. */
  private readonly shared = new Map<number, CappedModule>();
  created = 0;
  retired = 0;

  constructor(private readonly options: WasmModulePoolOptions) {}

  async acquire(memoryBytes: number): Promise<CappedModule> {
    const capBytes = capBytesFor(memoryBytes);
    const cm = this.shared.get(capBytes);
    if (cm) {
      cm.holders++;
      this.shared.delete(capBytes);
      this.shared.set(capBytes, cm);
      return cm;
    }
    const made = await createCappedModule(capBytes);
    this.created++;
    made.holders++;
    // Another call of this cap may have made one meanwhile: that one stays shared, this serves its call.
    if (this.shared.has(capBytes)) made.retiring = true;
    else this.shared.set(capBytes, made);
    this.trimCaps();
    return made;
  }

  /** A call ended on the module; true when the module is kept for later calls. */
  release(m: CappedModule): boolean {
    m.holders--;
    m.calls++;
    if (m.broken || m.memory.buffer.byteLength > this.options.recycleAboveBytes || m.calls >= this.options.maxCallsPerModule) this.retire(m);
    this.trimCaps();
    if (!m.retiring) return true;
    if (m.holders === 0) this.retired++;
    return false;
  }

  /** No new call gets `m`; it is dropped (the GC frees it) once its last call ends. */
  private retire(m: CappedModule): void {
    if (m.retiring) return;
    m.retiring = true;
    if (this.shared.get(m.capBytes) === m) this.shared.delete(m.capBytes);
  }

  /**
   * Idle modules are kept for at most MAX_IDLE_CAP_SIZES caps (16+ MiB each): callers that vary
   * memoryBytes would otherwise leave one behind for every size they ever asked for.
   */
  private trimCaps(): void {
    for (const [cap, m] of this.shared) {
      if (this.shared.size <= MAX_IDLE_CAP_SIZES) break;
      if (m.holders > 0) continue;
      this.shared.delete(cap);
      m.retiring = true;
      this.retired++;
    }
  }
}
