import { randomBytes } from 'node:crypto';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import type { GuestBinding, HostBuiltins } from '../builtins/guest-boundary.js';
import type { CallSlot, CallState } from './call-state.js';
import { GUEST_PRELUDE } from './guest-prelude.js';
import { createHostFunctions } from './host-functions.js';
import { MemorySnapshot, releaseCallImage } from './memory-snapshot.js';
import { loadQuickJSBuild } from './quickjs-build.js';

/** Thrown for a failure of the sandbox machinery itself (not of user code): the caller reports INTERNAL. */
export class SandboxInternalError extends Error {
  override readonly name = 'SandboxInternalError';
}

/** What a realm is prepared on: a WASM module nothing has run in (a CappedModule, wasm-modules.ts). */
export interface RealmModule {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly breakAddress: number;
  readonly stackLow: WebAssembly.Global;
}

/** The bindings, as the prelude reads them: serialised once per table. */
const bindingsJson = new WeakMap<readonly GuestBinding[], string>();

function bindingsJsonOf(bindings: readonly GuestBinding[]): string {
  let json = bindingsJson.get(bindings);
  if (json === undefined) bindingsJson.set(bindings, (json = JSON.stringify(bindings)));
  return json;
}

/**
 * A hardened QuickJS runtime + context, prepared once per module (host functions, prelude, frozen
 * intrinsics) and snapshotted: `begin()` restores the module's memory to that snapshot, so every call
 * starts from a byte-identical realm that no code but the prelude has run in.
 *
 * Rules that keep the JS side of quickjs-emscripten consistent with a memory that is put back:
 * - everything with a JS-side twin is made before the snapshot: host functions (their ids live in
 *   `rt.hostRefs`), the interrupt handler, the lazily cached context handles (`ctx.undefined`, …);
 * - a handle made during a call points into memory the restore reverts: it is dropped, never disposed
 *   after the call (that would free memory of the restored realm); `CallState.close` makes sure no host
 *   work calls into the realm after its call ended;
 * - a host function freed by a call's garbage collection is back after the restore, so its id must stay
 *   in `rt.hostRefs`: deletions are ignored (the module is dropped whole, never disposed piecewise).
 */
export class SnapshotRealm {
  private constructor(
    readonly rt: QuickJSRuntime,
    readonly ctx: QuickJSContext,
    readonly slot: CallSlot,
    readonly setData: QuickJSHandle,
    readonly serialize: QuickJSHandle,
    readonly explain: QuickJSHandle,
    /** The prelude's report of `ld.*` promises left pending or rejected unobserved (JSON text). */
    readonly report: QuickJSHandle,
    private readonly snapshot: MemorySnapshot,
  ) {}

  /** Prepares the realm on a module nothing has run in, with these built-ins, and takes its snapshot. */
  static prepare(cm: RealmModule, maxStackBytes: number, builtins: HostBuiltins): SnapshotRealm {
    const rt = cm.module.newRuntime();
    // Always set: QuickJS's default stack can exceed a thread's V8 stack, and a V8 overflow inside
    // the WASM corrupts the runtime.
    rt.setMaxStackSize(maxStackBytes);
    const ctx = rt.newContext();
    const slot: CallSlot = { call: undefined, token: `ldbox:bytes:${randomBytes(12).toString('base64url')}` };
    rt.setInterruptHandler(() => slot.call?.shouldInterrupt() ?? false);
    rt.hostRefs.delete = () => {};
    // Cached lazily by quickjs-emscripten: made now, so that none is first made (and lost) in a call.
    for (const h of [ctx.undefined, ctx.null, ctx.true, ctx.false, ctx.global]) if (!h.alive) throw new SandboxInternalError('context handle not alive');
    const prelude = ctx.evalCode(GUEST_PRELUDE, 'ldbox:prelude', { type: 'global', strict: true });
    if (prelude.error) throw new SandboxInternalError(`prelude failed: ${JSON.stringify(ctx.dump(prelude.error))}`);
    const args = [createHostFunctions(ctx, slot, builtins.table), ctx.newString(slot.token), ctx.newString(bindingsJsonOf(builtins.bindings))];
    const installed = ctx.callFunction(prelude.value, ctx.undefined, ...args);
    if (installed.error) throw new SandboxInternalError(`prelude install failed: ${JSON.stringify(ctx.dump(installed.error))}`);
    for (const h of args) h.dispose();
    prelude.value.dispose();
    const [setData, serialize, explain, report] = [0, 1, 2, 3].map((i) => ctx.getProp(installed.value, i)) as [
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
    ];
    installed.value.dispose();
    // Settle what the prelude left in the job queue, so that no call inherits a pending job.
    rt.executePendingJobs();
    const snapshot = MemorySnapshot.capture(cm.memory, loadQuickJSBuild(), cm.breakAddress, cm.stackLow);
    return new SnapshotRealm(rt, ctx, slot, setData, serialize, explain, report, snapshot);
  }

  /**
   * The call whose memory the module holds: the one running, or one that parked and whose memory has not
   * been needed by another call since (so resuming it costs nothing).
   */
  #occupant: CallState | undefined;

  /** Restores the prepared realm and hands it to `call` (a call parked in memory is saved first). */
  begin(call: CallState): void {
    this.#saveOccupant();
    this.snapshot.restore();
    this.#occupant = call;
    this.slot.call = call;
  }

  /**
   * The call waits for host work: no guest code of it runs until {@link resume}. Its memory stays in
   * the module until another call needs the module; only then are its pages saved.
   */
  park(): void {
    this.slot.call = undefined;
  }

  /** Makes `call`'s memory the module's again (after saving the call that holds it) and hands it the realm. */
  resume(call: CallState): void {
    if (this.#occupant !== call) {
      this.#saveOccupant();
      const image = call.parkedImage;
      if (image === undefined) throw new SandboxInternalError('a parked call has no saved memory to resume from');
      this.snapshot.restoreCall(image);
      call.parkedImage = undefined;
      releaseCallImage(image);
      this.#occupant = call;
    }
    this.slot.call = call;
  }

  /** Ends the call's hold on the realm. Its memory is left as the call made it until the next `begin`. */
  end(call: CallState): void {
    this.slot.call = undefined;
    if (this.#occupant === call) this.#occupant = undefined;
  }

  /** The heap the call in memory has reached (its high-water mark: the break never moves down). */
  heapEnd(): number {
    return this.snapshot.currentBreak();
  }

  /** The allocator's break in the snapshot: where every call's own heap starts. */
  get heapStart(): number {
    return this.snapshot.breakAtSnapshot;
  }

  /** A parked call still in memory is copied out, so that another call can have the module. */
  #saveOccupant(): void {
    const parked = this.#occupant;
    this.#occupant = undefined;
    if (parked === undefined || parked.closed) return;
    const image = this.snapshot.saveCall();
    // A call that overwrote the allocator's break cannot be resumed: it ends as a sandbox failure.
    if (image === undefined) parked.unresumable = true;
    else parked.parkedImage = image;
  }

  /** For tests: where memory differs from the snapshot, `undefined` when it is byte-identical. */
  differenceFromSnapshot(): string | undefined {
    return this.snapshot.firstDifference();
  }

  /** For tests: put the snapshot back without starting a call. */
  restoreForTest(): void {
    this.snapshot.restore();
  }
}
