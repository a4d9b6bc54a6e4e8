import { randomBytes } from 'node:crypto';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten';
import { BUILTINS, GUEST_BINDINGS } from '../builtins/index.js';
import type { CallState } from './call-state.js';
import { GUEST_PRELUDE } from './guest-prelude.js';
import { createHostFunctions } from './host-functions.js';
import type { CappedModule } from './wasm-modules.js';

/** Thrown for a failure of the sandbox machinery itself (not of user code): the caller reports INTERNAL. */
export class SandboxInternalError extends Error {}

/** Which call a prepared context serves; host functions read it when the guest calls them. */
export interface CallSlot {
  call: CallState | undefined;
  /**
   * Marks binary values in data crossing the boundary (see data-crossing.ts). Random per sandbox and
   * never visible to user code, so user data cannot forge a marker; free of NUL, since strings cross
   * into QuickJS as C strings.
   */
  readonly token: string;
}

/** The bindings, as the prelude reads them: serialised once per process. */
const BINDINGS_JSON = JSON.stringify(GUEST_BINDINGS);

/**
 * A fresh, hardened QuickJS runtime + context that no code but the prelude has run in. It is made
 * before its call arrives (when the worker is idle) and used by exactly one call, then disposed.
 */
export interface PreparedSandbox {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  readonly slot: CallSlot;
  readonly setData: QuickJSHandle;
  readonly serialize: QuickJSHandle;
  readonly explain: QuickJSHandle;
  /** Every handle to dispose before the context, in creation order. */
  readonly owned: QuickJSHandle[];
}

/**
 * Creates the runtime and context, installs the host functions and runs the guest prelude (no eval,
 * tamed Function constructors, frozen realm). About three quarters of a trivial call's cost is here,
 * which is why it can run ahead of the call.
 */
export function prepareSandbox(cm: CappedModule, maxStackBytes: number): PreparedSandbox {
  const rt = cm.module.newRuntime();
  const owned: QuickJSHandle[] = [];
  let ctx: QuickJSContext | undefined;
  try {
    // Always set: QuickJS's default stack can exceed a thread's V8 stack, and a V8 overflow inside
    // the WASM corrupts the runtime.
    rt.setMaxStackSize(maxStackBytes);
    ctx = rt.newContext();
    const slot: CallSlot = { call: undefined, token: `ldbox:bytes:${randomBytes(12).toString('base64url')}` };
    const prelude = ctx.evalCode(GUEST_PRELUDE, 'ldbox:prelude', { type: 'global', strict: true });
    if (prelude.error) {
      owned.push(prelude.error);
      throw new SandboxInternalError(`prelude failed: ${JSON.stringify(ctx.dump(prelude.error))}`);
    }
    owned.push(prelude.value);
    const args = [createHostFunctions(ctx, slot, BUILTINS), ctx.newString(slot.token), ctx.newString(BINDINGS_JSON)];
    owned.push(...args);
    const installed = ctx.callFunction(prelude.value, ctx.undefined, ...args);
    if (installed.error) {
      owned.push(installed.error);
      throw new SandboxInternalError(`prelude install failed: ${JSON.stringify(ctx.dump(installed.error))}`);
    }
    owned.push(installed.value);
    const [setData, serialize, explain] = [0, 1, 2].map((i) => ctx!.getProp(installed.value, i)) as [
      QuickJSHandle,
      QuickJSHandle,
      QuickJSHandle,
    ];
    owned.push(setData, serialize, explain);
    return { rt, ctx, slot, setData, serialize, explain, owned };
  } catch (err) {
    disposeSandbox(cm, rt, ctx, owned);
    throw err;
  }
}

/** Disposes handles (newest first), then the context, then the runtime; a failure marks the module broken. */
export function disposeSandbox(
  cm: CappedModule,
  rt: QuickJSRuntime,
  ctx: QuickJSContext | undefined,
  owned: QuickJSHandle[],
): void {
  try {
    for (let i = owned.length - 1; i >= 0; i--) {
      const h = owned[i]!;
      if (h.alive) h.dispose();
    }
    ctx?.dispose();
    rt.dispose();
  } catch {
    // A handle we missed (QuickJS aborts on live objects at rt.dispose) or a trapped module: never reuse it.
    cm.broken = true;
  }
}
