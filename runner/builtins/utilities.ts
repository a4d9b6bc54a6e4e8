import { type AsyncBuiltin, type BuiltinModule, GuestFacingError, type SyncBuiltin } from './guest-boundary.js';

/** Spec "Utilities": ld.log, ld.wait, atob, btoa (Buffer.from lives in the guest prelude). */

// biome-ignore lint/suspicious/noControlCharactersInRegex: the Latin-1 range starts at U+0000 on purpose
const LATIN1 = /^[\u0000-\u00ff]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

/** The guest formats ld.log's arguments into one string. */
export const log: SyncBuiltin = (args, ctx) => {
  if (typeof args[0] === 'string') ctx.log(args[0]);
  return undefined;
};

export const wait: AsyncBuiltin = (args, ctx) => {
  const ms = args[0];
  if (typeof ms !== 'number' || !(ms >= 0 && ms <= 30000)) {
    const shown = args.length === 0 ? 'nothing' : typeof ms === 'number' ? String(ms) : describe(ms);
    throw new GuestFacingError('RangeError', `ld.wait(ms) takes a number from 0 to 30000, got ${shown}`);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      unregister();
      resolve(undefined);
    }, ms);
    // When the call ends first, the promise is simply dropped with the call.
    const unregister = ctx.onEnd(() => clearTimeout(timer));
  });
};

export const btoa: SyncBuiltin = (args) => {
  const s = stringArg(args, 'btoa');
  if (!LATIN1.test(s)) throw new GuestFacingError('TypeError', 'btoa: the string has characters outside Latin-1 (encode it first)');
  return Buffer.from(s, 'latin1').toString('base64');
};

export const atob: SyncBuiltin = (args) => {
  const s = stringArg(args, 'atob').replace(/[\t\n\f\r ]+/g, '');
  if (!BASE64.test(s)) throw new GuestFacingError('TypeError', 'atob: the string is not valid base64');
  return Buffer.from(s, 'base64').toString('latin1');
};

/** Like the web's atob/btoa: the argument is converted to a string; a missing one is an error. */
function stringArg(args: unknown[], fn: string): string {
  if (args.length === 0) throw new GuestFacingError('TypeError', `${fn} takes 1 argument`);
  const v = args[0];
  if (typeof v === 'string') return v;
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new GuestFacingError('TypeError', `${fn} takes a string, got ${describe(v)}`);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

export const UTILITIES: BuiltinModule = {
  sync: { log, atob, btoa },
  async: { wait },
  bindings: [
    { guest: 'wait', host: 'wait', mode: 'async' },
    { guest: 'atob', host: 'atob', mode: 'sync', global: true },
    { guest: 'btoa', host: 'btoa', mode: 'sync', global: true },
  ],
};
