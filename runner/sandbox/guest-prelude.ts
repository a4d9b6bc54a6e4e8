/**
 * The guest side of the sandbox: one function expression evaluated in every fresh QuickJS context before
 * the user's code. The host calls it once with the host functions, and it
 *
 * - removes `eval` and tames every Function constructor (no code from strings; spec "What the service does" 3),
 * - defines the spec's globals (`data`, `ld`, `atob`, `btoa`, `Buffer`),
 * - freezes the intrinsics and the global object (spec "Utilities": changing globals throws),
 * - returns `[setData, serialize, explain]`: the host fills `data` when a call takes the context, and
 *   serialises the result or describes the error after the user's code settled.
 *
 * Nothing in it depends on the call, so a context can be prepared before its call arrives (see
 * prepare-sandbox.ts); it is still used by exactly one call.
 *
 * It runs on every call and QuickJS parses at ~100 µs per KB, so it stays small: everything that can
 * live on the host (ld.log formatting, atob/btoa, the ld.* bodies) does. See bench/execute.
 */
export const GUEST_PRELUDE = String.raw`(function (h) {
'use strict';
const g = globalThis, O = Object, freeze = O.freeze, def = O.defineProperty, proto = O.getPrototypeOf;
const TE = TypeError, AB = ArrayBuffer, U8 = Uint8Array, isView = AB.isView, stringify = JSON.stringify, parse = JSON.parse;
let maxLog = 0;
const call = Function.prototype.call.bind(Function.prototype.call), slice = AB.prototype.slice;
const fixed = (o, k, value) => def(o, k, { value, writable: false, enumerable: false, configurable: false });
delete g.eval;
const noCode = function Function() { throw new TE('code generation from strings is disabled in the sandbox'); };
const fps = [proto(function () {}), proto(async function () {}), proto(function* () {}), proto(async function* () {})];
for (const p of fps) fixed(p, 'constructor', noCode);
fixed(noCode, 'prototype', fps[0]);
fixed(g, 'Function', noCode);
// Frozen prototypes make 'err.name = x' throw (the override mistake); these common ones get a setter
// that defines an own property on the instance instead.
const overridable = (o, ks) => { for (const k of ks) { const d = O.getOwnPropertyDescriptor(o, k); if (!d || !('value' in d)) continue; const v = d.value;
  def(o, k, { get() { return v; }, set(x) { if (this === o) throw new TE('Cannot assign to read only property ' + k); def(this, k, { value: x, writable: true, enumerable: true, configurable: true }); }, enumerable: d.enumerable, configurable: false }); } };
overridable(O.prototype, ['toString', 'valueOf', 'constructor', 'toLocaleString']);
overridable(fps[0], ['toString']);
for (const E of [Error, TE, RangeError, SyntaxError, ReferenceError, EvalError, URIError, InternalError, AggregateError]) overridable(E.prototype, ['name', 'message', 'constructor']);
const from = function from(x) {
  if (arguments.length !== 1) throw new TE('Buffer.from takes exactly one argument: an Array, Uint8Array or ArrayBuffer');
  if (x instanceof AB) return new U8(call(slice, x, 0));
  if (x instanceof U8 || Array.isArray(x)) return new U8(x);
  throw new TE('Buffer.from takes an Array, Uint8Array or ArrayBuffer, got ' + (x === null ? 'null' : typeof x) + (typeof x === 'string' ? ' (use atob for base64)' : ''));
};
const TA = proto(U8), it = (x) => proto(x[Symbol.iterator]());
const hidden = [TA, TA.prototype, fps[1], fps[2], fps[3], fps[2].prototype, fps[3].prototype, proto(fps[2].prototype), proto(fps[3].prototype),
  it([]), it(new Map()), it(new Set()), it(''), proto(it([])), proto(/x/[Symbol.matchAll]('')), from, h.wait, h.atob, h.btoa];
for (const o of hidden) { freeze(o); if (o.constructor) freeze(o.constructor); }
for (const k of O.getOwnPropertyNames(g)) { const v = g[k]; if (v !== g && v !== null && (typeof v === 'object' || typeof v === 'function')) { freeze(v); if (v.prototype) freeze(v.prototype); } }
const data = {};
fixed(g, 'data', data);
const describe = (v) => {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return String(v.name) + ': ' + String(v.message);
  if (typeof v === 'function') return '[Function ' + (v.name || 'anonymous') + ']';
  if (v instanceof AB || isView(v)) return '[' + ((v.constructor && v.constructor.name) || 'binary') + ' ' + v.byteLength + ' bytes]';
  if (v === null || typeof v !== 'object') return String(v);
  try { const s = stringify(v, (k, x) => typeof x === 'bigint' ? String(x) : x); return s === undefined ? String(v) : s; } catch (e) { return '[unserialisable object]'; }
};
const log = function log(...args) { let s = ''; for (let i = 0; i < args.length && s.length <= maxLog; i++) s += (i ? ' ' : '') + describe(args[i]); h.log(s.length > maxLog ? s.slice(0, maxLog) + ' [truncated]' : s); };
fixed(g, 'ld', freeze({ log: freeze(log), wait: h.wait }));
fixed(g, 'atob', h.atob);
fixed(g, 'btoa', h.btoa);
fixed(g, 'Buffer', freeze({ from }));
freeze(g);
const setData = (json, logLimit) => { const d = parse(json); data.input = d.input; data.auth = d.auth; maxLog = logLimit; };
const serialize = (value, token, maxResult) => {
  const bins = [];
  const json = stringify(value === undefined ? null : value, (k, v) => {
    if (v instanceof AB) { bins.push(v); return { [token]: bins.length - 1 }; }
    if (isView(v)) { bins.push(call(slice, v.buffer, v.byteOffset, v.byteOffset + v.byteLength)); return { [token]: bins.length - 1 }; }
    if (typeof v === 'bigint') throw new TE('a BigInt cannot be returned (at key "' + k + '"): convert it to a string or a number');
    return v;
  });
  let size = json === undefined ? 4 : json.length;
  for (const b of bins) size += b.byteLength;
  if (size > maxResult) throw new RangeError('the result is ' + size + ' bytes, over the limit of ' + maxResult + ' bytes');
  return [json === undefined ? 'null' : json, bins];
};
const explain = (e) => {
  try {
    if (e instanceof Error) return [String(e.name), String(e.message), typeof e.stack === 'string' ? e.stack : ''];
    let s; try { s = stringify(e); } catch (x) { }
    return ['Error', 'Uncaught ' + (s === undefined ? String(e) : s), ''];
  } catch (x) { return ['Error', 'the thrown value could not be described', '']; }
};
return [setData, serialize, explain];
})`;
