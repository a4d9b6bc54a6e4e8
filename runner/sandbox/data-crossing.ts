import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';
import { GuestFormData } from '../builtins/guest-boundary.js';

/**
 * Values cross the sandbox boundary as data only: JSON text plus a list of byte buffers. The side that
 * serialises replaces each binary value with a marker `{[token]: index}` (and a non-finite number with
 * `{[token]: 'NaN' | 'Infinity' | '-Infinity'}`); `token` is random per
 * sandbox and never visible to user code, so user data cannot forge a marker. JSON.parse defines keys
 * as own data properties, so a `__proto__` key stays data on either side.
 */

/** Parses guest-serialised JSON, putting the binary values back as Uint8Array (and FormData as GuestFormData). */
export function parseWithBinaries(json: string, token: string, binaries: readonly Uint8Array[]): unknown {
  const formKey = `${token}:form`;
  return JSON.parse(json, (_key, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const rec = v as Record<string, unknown>;
      const index = rec[token];
      if (Object.keys(rec).length === 1) {
        const form = rec[formKey];
        if (Array.isArray(form)) return new GuestFormData(form);
        if (typeof index === 'number') return binaries[index] ?? new Uint8Array(0);
        // NaN and ±Infinity, which JSON has no syntax for.
        if (index === 'NaN' || index === 'Infinity' || index === '-Infinity') return Number(index);
      }
    }
    return v;
  });
}

/** Serialises a host value for the guest: Uint8Array/ArrayBuffer become markers, their bytes go alongside. */
export function stringifyWithBinaries(value: unknown, token: string): { json: string; binaries: Uint8Array[] } {
  const binaries: Uint8Array[] = [];
  const json = JSON.stringify(value === undefined ? null : value, function (this: unknown, _key, v: unknown) {
    if (v instanceof Uint8Array || v instanceof ArrayBuffer) {
      binaries.push(v instanceof ArrayBuffer ? new Uint8Array(v) : v);
      return { [token]: binaries.length - 1 };
    }
    return v;
  });
  return { json: json ?? 'null', binaries };
}

/** Reads a guest `[json, [ArrayBuffer...]]` pair (as made by the prelude's `enc`). */
export function readGuestPair(ctx: QuickJSContext, pair: QuickJSHandle): { json: string; binaries: Uint8Array[] } {
  const json = ctx.getProp(pair, 0).consume((h) => ctx.getString(h));
  const binaries: Uint8Array[] = [];
  ctx.getProp(pair, 1).consume((list) => {
    const n = ctx.getProp(list, 'length').consume((h) => ctx.getNumber(h));
    for (let i = 0; i < n; i++) {
      ctx.getProp(list, i).consume((ab) => ctx.getArrayBuffer(ab).consume((view) => binaries.push(view.value.slice())));
    }
  });
  return { json, binaries };
}

/** Builds the guest value `[true, json, [ArrayBuffer...]]` that the prelude's `dec` reads. The caller owns it. */
export function newGuestSuccess(ctx: QuickJSContext, json: string, binaries: readonly Uint8Array[]): QuickJSHandle {
  const result = ctx.newArray();
  ctx.setProp(result, 0, ctx.true);
  ctx.newString(json).consume((h) => ctx.setProp(result, 1, h));
  const list = ctx.newArray();
  binaries.forEach((b, i) => {
    const copy = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    ctx.newArrayBuffer(copy).consume((h) => ctx.setProp(list, i, h));
  });
  ctx.setProp(result, 2, list);
  list.dispose();
  return result;
}
