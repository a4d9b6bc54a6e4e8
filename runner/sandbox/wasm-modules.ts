import { newQuickJSWASMModuleFromVariant, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten';
import type { PreparedSandbox } from './prepare-sandbox.js';

/**
 * QuickJS WebAssembly modules with a hard memory cap, one sandbox at a time per module.
 *
 * Why a module per sandbox: `setMemoryLimit` does not cap memory in quickjs-emscripten 0.32 (it charges
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

export interface CappedModule {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly capBytes: number;
  /** Set when the module may be corrupt (a WASM trap, a failed dispose): it is never reused. */
  broken: boolean;
  calls: number;
  /** The next call's sandbox, made while the module was idle. */
  prepared?: PreparedSandbox | undefined;
  /** True while a call holds the module. */
  inUse: boolean;
}

export interface WasmModulePoolOptions {
  /** Idle modules kept per cap size. */
  maxIdlePerCap: number;
  /** A module whose memory grew beyond this many bytes is not reused. */
  recycleAboveBytes: number;
  /** A module is retired after this many calls (bounds any slow leak inside the module). */
  maxCallsPerModule: number;
}

export function capBytesFor(memoryBytes: number): number {
  const want = Math.max(INITIAL_PAGES * PAGE, memoryBytes + MODULE_RESERVE_BYTES);
  return Math.ceil(want / PAGE) * PAGE;
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
    const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: capBytes / PAGE });
    const module = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmMemory: memory }));
    this.created++;
    return { module, memory, capBytes, broken: false, calls: 0, inUse: true };
  }

  /** Returns the module after a call; true when it is kept for reuse. */
  release(m: CappedModule): boolean {
    m.inUse = false;
    m.calls++;
    if (
      m.broken ||
      m.memory.buffer.byteLength > this.options.recycleAboveBytes ||
      m.calls >= this.options.maxCallsPerModule
    ) {
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
