import type { QuickJSContext, QuickJSHandle, VmCallResult } from 'quickjs-emscripten';
import type { CallState } from './call-state.js';
import type { CallSlot } from './prepare-sandbox.js';

/**
 * The host side of the sandbox's built-ins. Each function here is called from guest code with guest
 * handles; it copies what it needs out as plain data, does its work on the host, and hands back fresh
 * guest values. A host exception never crosses as is: quickjs-emscripten would copy its message and
 * host stack into the guest, so every failure becomes a new guest error with a clean message.
 */

/** A failure meant for user code: its message is shown to the guest as is (after redaction). */
export class GuestFacingError extends Error {
  constructor(
    readonly guestName: 'TypeError' | 'RangeError' | 'Error',
    message: string,
  ) {
    super(message);
  }
}

type HostImpl = (ctx: QuickJSContext, call: CallState, args: QuickJSHandle[]) => QuickJSHandle | undefined;

/** Wraps a host implementation so that no host error or host stack reaches the guest. */
function guarded(ctx: QuickJSContext, slot: CallSlot, impl: HostImpl) {
  return (...args: QuickJSHandle[]): QuickJSHandle | VmCallResult<QuickJSHandle> | undefined => {
    const call = slot.call;
    // Only user code calls these, and it runs only while a call holds the context.
    if (call === undefined || call.closed) return { error: ctx.newError({ name: 'Error', message: 'the sandbox call has ended' }) };
    try {
      return impl(ctx, call, args);
    } catch (err) {
      const facing = err instanceof GuestFacingError;
      const handle = ctx.newError({
        name: facing ? err.guestName : 'Error',
        message: facing ? call.redact(err.message) : 'internal error in a sandbox built-in',
      });
      if (!facing) call.noteHostFault(err);
      return { error: handle };
    }
  };
}

function stringArg(ctx: QuickJSContext, args: QuickJSHandle[], fn: string): string {
  const h = args[0];
  if (h === undefined) throw new GuestFacingError('TypeError', `${fn} takes 1 argument`);
  const type = ctx.typeof(h);
  if (type === 'string') return ctx.getString(h);
  if (type === 'number' || type === 'boolean' || type === 'undefined') return String(ctx.dump(h));
  if (ctx.sameValue(h, ctx.null)) return 'null';
  throw new GuestFacingError('TypeError', `${fn} takes a string, got ${type}`);
}

const LATIN1 = /^[\u0000-\u00ff]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

function btoa(ctx: QuickJSContext, _call: CallState, args: QuickJSHandle[]): QuickJSHandle {
  const s = stringArg(ctx, args, 'btoa');
  if (!LATIN1.test(s)) throw new GuestFacingError('TypeError', 'btoa: the string has characters outside Latin-1 (encode it first)');
  return ctx.newString(Buffer.from(s, 'latin1').toString('base64'));
}

function atob(ctx: QuickJSContext, _call: CallState, args: QuickJSHandle[]): QuickJSHandle {
  const s = stringArg(ctx, args, 'atob').replace(/[\t\n\f\r ]+/g, '');
  if (!BASE64.test(s)) throw new GuestFacingError('TypeError', 'atob: the string is not valid base64');
  return ctx.newString(Buffer.from(s, 'base64').toString('latin1'));
}

function log(ctx: QuickJSContext, call: CallState, args: QuickJSHandle[]): undefined {
  const h = args[0];
  if (h !== undefined && ctx.typeof(h) === 'string') call.logs.info(ctx.getString(h));
  return undefined;
}

function wait(ctx: QuickJSContext, call: CallState, args: QuickJSHandle[]): QuickJSHandle {
  const h = args[0];
  const ms = h !== undefined && ctx.typeof(h) === 'number' ? ctx.getNumber(h) : NaN;
  if (!(ms >= 0 && ms <= 30000)) {
    const shown = h === undefined ? 'nothing' : ctx.typeof(h) === 'number' ? String(ms) : `a ${ctx.typeof(h)}`;
    throw new GuestFacingError('RangeError', `ld.wait(ms) takes a number from 0 to 30000, got ${shown}`);
  }
  return call.hostAsync(
    (signal) =>
      new Promise<undefined>((resolve, reject) => {
        const timer = setTimeout(() => resolve(undefined), ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        }, { once: true });
      }),
  );
}

/** Creates the object of host functions handed to the guest prelude (`h` there). */
export function createHostFunctions(ctx: QuickJSContext, slot: CallSlot): QuickJSHandle {
  const h = ctx.newObject();
  const impls: Record<string, HostImpl> = { log, wait, atob, btoa };
  for (const [name, impl] of Object.entries(impls)) {
    const fn = ctx.newFunction(name, guarded(ctx, slot, impl));
    ctx.setProp(h, name, fn);
    fn.dispose();
  }
  return h;
}
