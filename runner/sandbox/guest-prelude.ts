/**
 * The guest side of the sandbox: one function expression evaluated in every fresh QuickJS context before
 * the user's code. The host calls it once with the host bridge (`h.invoke`, `h.invokeAsync`), the
 * sandbox's marker token and the list of built-ins, and it
 *
 * - removes `eval` and tames every Function constructor (no code from strings; spec "What the service does" 3),
 * - defines the spec's globals (`data`, `ld`, `atob`, `btoa`, `Buffer`),
 * - freezes the intrinsics and the global object (spec "Utilities": changing globals throws),
 * - returns `[setData, serialize, explain, report]`: the host fills `data` when a call takes the context,
 *   serialises the result or describes the error after the user's code settled, and asks which `ld.*`
 *   promises were left pending or rejected unobserved.
 *
 * Nothing in it depends on the call: it runs once per module, and the realm it leaves is snapshotted
 * and restored before every call (snapshot-realm.ts). Because of that, `Math.random` is replaced by a
 * generator (xoshiro128**) whose state `setData` seeds per call from the host's CSPRNG: QuickJS's own
 * state would be restored, and repeat, with the rest of memory.
 *
 * Built-ins cross the boundary as data only: arguments are serialised here (`enc`: JSON text plus
 * the bytes of binary values, marked with the token) and results parsed back (`dec`). Strings never
 * cross raw, because quickjs-emscripten passes them as C strings and a NUL would cut them. A host
 * failure comes back as `[false, name, message]` and is thrown here as a real guest TypeError/RangeError.
 *
 * The bodies of the built-ins live on the host; this only marshals.
 */
// biome-ignore lint/complexity/noUselessStringRaw: raw so a backslash added to the guest source stays as written
export const GUEST_PRELUDE = String.raw`(function (h, tok, bindings) {
'use strict';
const g = globalThis, O = Object, freeze = O.freeze, def = O.defineProperty, proto = O.getPrototypeOf;
const TE = TypeError, RE = RangeError, AB = ArrayBuffer, U8 = Uint8Array, isView = AB.isView, stringify = JSON.stringify, parse = JSON.parse;
const call = Function.prototype.call.bind(Function.prototype.call), slice = AB.prototype.slice;
// instanceof is fooled by a Proxy of an ArrayBuffer; the byteLength getter only accepts the real thing.
const abLength = O.getOwnPropertyDescriptor(AB.prototype, 'byteLength').get;
const isAB = (x) => { if (!(x instanceof AB)) return false; try { call(abLength, x); return true; } catch (e) { return false; } };
const fixed = (o, k, value) => def(o, k, { value, writable: false, enumerable: false, configurable: false });
const named = (n, f) => { def(f, 'name', { value: n }); return freeze(f); };
let maxLog = 0;
delete g.eval;
const noCode = function Function() { throw new TE('code generation from strings is disabled in the sandbox'); };
const fps = [proto(function () {}), proto(async function () {}), proto(function* () {}), proto(async function* () {})];
for (const p of fps) fixed(p, 'constructor', noCode);
fixed(noCode, 'prototype', fps[0]);
fixed(g, 'Function', noCode);
// QuickJS lets defineProperty change a non-configurable, non-writable property of the global object
// (ld, data, Object...); these guards refuse it as the language says they must.
const noRedefine = (k) => { throw new TE('Cannot redefine property: ' + String(k)); };
const guard = (o, k, f) => fixed(o, k, named(k, f));
const rdef = Reflect.defineProperty, defs = O.defineProperties;
guard(O, 'defineProperty', function defineProperty(o, k, d) { return o === g ? noRedefine(k) : def(o, k, d); });
guard(O, 'defineProperties', function defineProperties(o, ds) { return o === g ? noRedefine(O.keys(ds)[0]) : defs(o, ds); });
guard(Reflect, 'defineProperty', function defineProperty(o, k, d) { return o === g ? false : rdef(o, k, d); });
for (const k of ['__defineGetter__', '__defineSetter__']) { const f = O.prototype[k]; if (f) guard(O.prototype, k, function (n, fn) { return this === g ? noRedefine(n) : call(f, this, n, fn); }); }
// Frozen prototypes make 'err.name = x' throw (the override mistake); these common ones get a setter
// that defines an own property on the instance instead.
const overridable = (o, ks) => { for (const k of ks) { const d = O.getOwnPropertyDescriptor(o, k); if (!d || !('value' in d)) continue; const v = d.value;
  def(o, k, { get() { return v; }, set(x) { if (this === o) throw new TE('Cannot assign to read only property ' + k); def(this, k, { value: x, writable: true, enumerable: true, configurable: true }); }, enumerable: d.enumerable, configurable: false }); } };
overridable(O.prototype, ['toString', 'valueOf', 'constructor', 'toLocaleString']);
overridable(fps[0], ['toString']);
for (const E of [Error, TE, RE, SyntaxError, ReferenceError, EvalError, URIError, InternalError, AggregateError]) overridable(E.prototype, ['name', 'message', 'constructor']);
const enc = (v) => {
  const bins = [];
  const json = stringify(v, (k, x) => {
    if (x !== null && typeof x === 'object' && forms.has(x)) return { [tok + ':form']: forms.get(x) };
    if (isAB(x)) { bins.push(x); return { [tok]: bins.length - 1 }; }
    if (isView(x)) { bins.push(call(slice, x.buffer, x.byteOffset, x.byteOffset + x.byteLength)); return { [tok]: bins.length - 1 }; }
    if (typeof x === 'bigint') throw new TE('a BigInt cannot leave the sandbox (at key "' + k + '"): convert it to a string or a number');
    if (typeof x === 'number' && !isFinite(x) && k !== '') return { [tok]: String(x) };
    return x;
  });
  return [json === undefined ? 'null' : json, bins];
};
const errs = { TypeError: TE, RangeError: RE, SyntaxError };
const dec = (r) => {
  if (!r[0]) throw new (errs[r[1]] || Error)(r[2]);
  const bins = r[2];
  return parse(r[1], (k, x) => (x !== null && typeof x === 'object' && typeof x[tok] === 'number' ? bins[x[tok]] : x));
};
const toJson = (t) => { try { return parse(t); } catch (e) { return undefined; } };
// Spec "ld.request": a FormData built here is sent as multipart/form-data. Its entries stay out of
// reach of user code (a WeakMap), and cross to the host as a marked list.
const forms = new WeakMap();
const FormData = named('FormData', class FormData {
  constructor() { forms.set(this, []); }
  append(name, value, fileName) {
    const e = forms.get(this);
    if (!e) throw new TE('FormData.append called on a non-FormData');
    if (arguments.length < 2) throw new TE('FormData.append takes (name, value) or (name, base64Content, fileName)');
    e.push(fileName === undefined ? [String(name), value instanceof AB || isView(value) ? value : String(value)] : [String(name), value, String(fileName)]);
  }
});
freeze(FormData.prototype);
// The promises of ld.* calls are watched, so that the host can warn about one still pending when the
// code returned, or rejected with nothing awaiting it (report). A watched promise is an LdPromise: its
// constructor is not Promise, so await, Promise.all and .catch all go through its then, which marks it
// observed. Its derived promises are plain ones (species). The list lives in the realm, so the restore
// empties it for every call.
const watched = [], watch = new WeakMap();
class LdPromise extends Promise {
  static get [Symbol.species]() { return Promise; }
  then(f, r) { const w = watch.get(this); if (w) w.o = true; return super.then(f, r); }
}
freeze(LdPromise); freeze(LdPromise.prototype);
const httpDec = (x) => { x = dec(x); if (typeof x.text === 'string') x.json = toJson(x.text); return x; };
const bind = (b) => b.mode === 'sync'
  ? named(b.guest, function (...a) { const e = enc(a); return dec(h.invoke(b.host, e[0], e[1])); })
  // The promise is made here (not by the host). A built-in that refuses its arguments answers at once
  // with a failure tuple, thrown here; otherwise it calls back with a tuple later.
  : named(b.guest, function (...a) {
    const e = enc(a), w = { n: b.guest, s: 0, o: false, e: undefined }, d = b.mode === 'http' ? httpDec : dec; let r;
    const p = new LdPromise((ok, ko) => { r = h.invokeAsync(b.host, e[0], e[1], (x) => { try { const v = d(x); w.s = 1; ok(v); } catch (err) { w.s = 2; w.e = err; ko(err); } }); });
    if (r !== undefined) return dec(r);
    watch.set(p, w); watched.push(w);
    return p;
  });
const from = named('from', function (x) {
  if (arguments.length !== 1) throw new TE('Buffer.from takes exactly one argument: an Array, Uint8Array or ArrayBuffer');
  if (isAB(x)) return new U8(call(slice, x, 0));
  if (x instanceof U8 || Array.isArray(x)) return new U8(x);
  throw new TE('Buffer.from takes an Array, Uint8Array or ArrayBuffer, got ' + (x === null ? 'null' : typeof x) + (typeof x === 'string' ? ' (use atob for base64)' : ''));
});
const describe = (v) => {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return String(v.name) + ': ' + String(v.message);
  if (typeof v === 'function') return '[Function ' + (v.name || 'anonymous') + ']';
  if (v instanceof AB || isView(v)) return '[' + ((v.constructor && v.constructor.name) || 'binary') + ' ' + v.byteLength + ' bytes]';
  if (v === null || typeof v !== 'object') return String(v);
  try { const s = stringify(v, (k, x) => typeof x === 'bigint' ? String(x) : x); return s === undefined ? String(v) : s; } catch (e) { return '[unserialisable object]'; }
};
// Lines are cut at the log budget here (the host cuts and marks them); the +1 tells the host it was over.
const log = named('log', function (...args) { let s = ''; for (let i = 0; i < args.length && s.length <= maxLog; i++) s += (i ? ' ' : '') + describe(args[i]); dec(h.invoke('log', stringify([s.slice(0, maxLog + 1)]), [])); });
const ld = { log };
for (const b of parse(bindings)) { if (b.global) fixed(g, b.guest, bind(b)); else ld[b.guest] = bind(b); }
// Math.random: xoshiro128** on four 32-bit words, 53 random bits per number; seeded by setData.
let r0 = 1, r1 = 2, r2 = 3, r3 = 4;
const rotl = (x, k) => (x << k) | (x >>> (32 - k)), imul = Math.imul;
const next32 = () => { const r = imul(rotl(imul(r1, 5), 7), 9) >>> 0, t = r1 << 9; r2 ^= r0; r3 ^= r1; r1 ^= r2; r0 ^= r3; r2 ^= t; r3 = rotl(r3, 11); return r; };
def(Math, 'random', { value: named('random', function random() { return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992; }), writable: true, enumerable: false, configurable: true });
const TA = proto(U8), it = (x) => proto(x[Symbol.iterator]());
const hidden = [TA, TA.prototype, fps[1], fps[2], fps[3], fps[2].prototype, fps[3].prototype, proto(fps[2].prototype), proto(fps[3].prototype),
  it([]), it(new Map()), it(new Set()), it(''), proto(it([])), proto(/x/[Symbol.matchAll]('')), h];
for (const o of hidden) { freeze(o); if (o.constructor) freeze(o.constructor); }
for (const k of O.getOwnPropertyNames(g)) { const v = g[k]; if (v !== g && v !== null && (typeof v === 'object' || typeof v === 'function')) { freeze(v); if (v.prototype) freeze(v.prototype); } }
const data = {};
fixed(g, 'data', data);
fixed(g, 'ld', freeze(ld));
fixed(g, 'Buffer', freeze({ from }));
fixed(g, 'FormData', FormData);
freeze(g);
const setData = (json, logLimit, s0, s1, s2, s3) => {
  const d = parse(json); data.input = d.input; data.auth = d.auth; maxLog = logLimit;
  r0 = s0 | 0; r1 = s1 | 0; r2 = s2 | 0; r3 = s3 | 0; if ((r0 | r1 | r2 | r3) === 0) r0 = 1;
};
const serialize = (value, maxResult) => {
  const r = enc(value === undefined ? null : value);
  let size = r[0].length;
  for (const b of r[1]) size += b.byteLength;
  if (size > maxResult) throw new RE('the result is ' + size + ' bytes, over the limit of ' + maxResult + ' bytes');
  return r;
};
const explain = (e) => {
  try {
    if (e instanceof Error) return stringify([String(e.name), String(e.message), typeof e.stack === 'string' ? e.stack : '']);
    let s; try { s = stringify(e); } catch (x) { }
    return stringify(['Error', 'Uncaught ' + (s === undefined ? String(e) : s), '']);
  } catch (x) { return stringify(['Error', 'the thrown value could not be described', '']); }
};
// What the host warns about when the code returned: ld.* calls still pending, or rejected unobserved.
const report = () => {
  const out = [];
  for (const w of watched) if (w.s === 0) out.push([w.n, 'pending']); else if (w.s === 2 && !w.o) out.push([w.n, 'rejected', describe(w.e)]);
  return stringify(out);
};
return [setData, serialize, explain, report];
})`;
