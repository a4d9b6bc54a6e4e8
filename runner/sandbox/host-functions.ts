import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';
import { type BuiltinTable, GuestFacingError } from '../builtins/guest-boundary.js';
import { type CallSlot, type CallState, MAX_PENDING_HOST_WORK } from './call-state.js';
import { newGuestSuccess, parseWithBinaries, stringifyWithBinaries } from './data-crossing.js';
import { GuestAllocationError } from './guest-allocation-error.js';

/**
 * The host side of the bridge the guest prelude calls: `invoke(name, json, binaries)` for synchronous
 * built-ins and `invokeAsync(name, json, binaries, resolve)` for those that return a promise (the
 * guest makes the promise and passes its resolve). Arguments are copied out of the
 * guest as data, the built-in runs on the host, and its result goes back as data in a fresh guest
 * value: `[true, json, binaries]`, or `[false, errorName, message]` for a failure, which the prelude
 * throws as a real guest error. A host exception never crosses as is: quickjs-emscripten would copy
 * its message and host stack into the guest.
 */
export function createHostFunctions(ctx: QuickJSContext, slot: CallSlot, table: BuiltinTable): QuickJSHandle {
  const h = ctx.newObject();
  ctx
    .newFunction('invoke', (...args) =>
      bridged(ctx, slot, args, (call, name, input) => {
        const fn = table.sync[name];
        if (!fn) return failure(ctx, call, new GuestFacingError('TypeError', `unknown built-in ${name}`));
        try {
          return success(ctx, slot, fn(input, call.builtins));
        } catch (err) {
          return failure(ctx, call, err);
        }
      }),
    )
    .consume((f) => ctx.setProp(h, 'invoke', f));
  ctx
    .newFunction('invokeAsync', (...args) =>
      bridged(ctx, slot, args, (call, name, input) => {
        const fn = table.async[name];
        const resolve = args[3];
        if (!fn || !resolve) return failure(ctx, call, new GuestFacingError('TypeError', `unknown built-in ${name}`));
        if (call.pendingHostWork >= MAX_PENDING_HOST_WORK) {
          return failure(ctx, call, new GuestFacingError('RangeError', `too many pending ld.* calls (at most ${MAX_PENDING_HOST_WORK})`));
        }
        // Argument checks run synchronously, so a refused call throws at once in the guest, as the spec's
        // ld.wait does; the work itself is awaited. Returning nothing tells the prelude the work started.
        let work: Promise<unknown>;
        try {
          work = fn(input, call.builtins);
        } catch (err) {
          return failure(ctx, call, err);
        }
        call.hostAsync(
          resolve.dup(),
          work,
          (value) => success(ctx, slot, value),
          (err) => failure(ctx, call, err),
        );
        return ctx.undefined;
      }),
    )
    .consume((f) => ctx.setProp(h, 'invokeAsync', f));
  return h;
}

type BridgeBody = (call: CallState, name: string, input: unknown[]) => QuickJSHandle;

function bridged(ctx: QuickJSContext, slot: CallSlot, args: QuickJSHandle[], body: BridgeBody): QuickJSHandle {
  const call = slot.call;
  // Only user code calls the bridge, and it runs only while a call holds the context.
  if (call === undefined || call.closed) return errorPair(ctx, 'Error', 'the sandbox call has ended');
  const [nameH, jsonH, binsH] = args;
  if (!nameH || !jsonH || !binsH) return errorPair(ctx, 'TypeError', 'bad built-in call');
  const name = ctx.getString(nameH);
  const binaries: Uint8Array[] = [];
  const n = ctx.getProp(binsH, 'length').consume((l) => ctx.getNumber(l));
  for (let i = 0; i < n; i++) {
    ctx.getProp(binsH, i).consume((ab) => ctx.getArrayBuffer(ab).consume((view) => binaries.push(view.value.slice())));
  }
  try {
    const input = parseWithBinaries(ctx.getString(jsonH), slot.token, binaries);
    return body(call, name, Array.isArray(input) ? input : []);
  } catch (err) {
    if (!(err instanceof GuestAllocationError)) throw err;
    // Nothing can be copied into the module any more: the interrupt handler stops the guest next.
    call.allocationFailed = true;
    return ctx.undefined;
  }
}

function success(ctx: QuickJSContext, slot: CallSlot, value: unknown): QuickJSHandle {
  const { json, binaries } = stringifyWithBinaries(value, slot.token);
  return newGuestSuccess(ctx, json, binaries);
}

function failure(ctx: QuickJSContext, call: CallState, err: unknown): QuickJSHandle {
  if (err instanceof GuestFacingError) return errorPair(ctx, err.guestName, call.redact(err.message));
  call.noteHostFault(err);
  return errorPair(ctx, 'Error', 'internal error in a sandbox built-in');
}

function errorPair(ctx: QuickJSContext, name: string, message: string): QuickJSHandle {
  const pair = ctx.newArray();
  ctx.setProp(pair, 0, ctx.false);
  ctx.newString(name).consume((h) => ctx.setProp(pair, 1, h));
  // Messages cross as C strings: a NUL would cut them.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point
  ctx.newString(message.replace(/\u0000/g, '\uFFFD')).consume((h) => ctx.setProp(pair, 2, h));
  return pair;
}
