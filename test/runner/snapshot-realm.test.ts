/**
 * The snapshot realm (runner/sandbox/snapshot-realm.ts, memory-snapshot.ts): every call starts from a
 * byte-identical prepared realm, so nothing one call does reaches the next, and a corrupted module is
 * whole again at its next call. In-process, on real QuickJS modules.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { runSandbox, type SandboxRequest } from '../../runner/sandbox/index.js';
import { inProcessLimits, MiB, sandboxRequest as request } from '../helpers/sandbox-calls.js';
import { GuestAllocationError } from '../../runner/sandbox/guest-allocation-error.js';
import { loadQuickJSBuild } from '../../runner/sandbox/quickjs-build.js';
import { type CappedModule, createCappedModule, WasmModulePool } from '../../runner/sandbox/wasm-modules.js';

const LIMITS = inProcessLimits();

async function run(cm: CappedModule, code: string, extra: Partial<SandboxRequest> = {}) {
  return runSandbox(cm, request(code, extra), LIMITS);
}

const EXACT_MATH = 'return [Math.exp(1), Math.sin(1), String(Math.max), JSON.stringify({a: [1, "b"]})]';
const EXACT_MATH_RESULT = JSON.stringify([Math.exp(1), Math.sin(1), 'function max() {\n    [native code]\n}', '{"a":[1,"b"]}']);

/** Where `needle` occurs in the module's memory, or -1. */
function findInMemory(cm: CappedModule, needle: string): number {
  return Buffer.from(cm.memory.buffer).indexOf(Buffer.from(needle, 'utf8'));
}

t.test('a module whose static data and heap were overwritten is whole again at its next call', async (t) => {
  const cm = await createCappedModule(64 * MiB);
  t.equal((await run(cm, EXACT_MATH)).resultJson, EXACT_MATH_RESULT);
  const build = loadQuickJSBuild();
  const view = new Uint8Array(cm.memory.buffer);
  // What a write through a failed allocation did before: bytes the attacker chose over address 0 and on.
  view.fill(0x41, 0, build.stackBottom);
  view.fill(0x42, build.stackTop, build.stackTop + 64 * 1024);
  for (let i = 0; i < 3; i++) t.equal((await run(cm, EXACT_MATH)).resultJson, EXACT_MATH_RESULT, `call ${i + 1} after the corruption`);
  t.equal(cm.broken, false);
});

t.test('a failed copy into a full module throws before writing and retires the module', async (t) => {
  const cm = await createCappedModule(16 * MiB);
  await run(cm, 'return 1');
  const realm = cm.realm!;
  const lowMemory = new Uint8Array(cm.memory.buffer).slice(0, 64 * 1024);
  t.throws(() => realm.ctx.newString('x'.repeat(20 * MiB)), GuestAllocationError);
  t.equal(cm.broken, true, 'marked broken');
  t.same(new Uint8Array(cm.memory.buffer).slice(0, 64 * 1024), lowMemory, 'nothing was written at address 0');
});

t.test('memory exhaustion followed by host copies: MEMORY_LIMIT, and later calls compute exact results', async (t) => {
  const pool = new WasmModulePool({ recycleAboveBytes: 256 * MiB, maxCallsPerModule: 1e9 });
  const attacks = [
    // Fill memory, catch the failure, then make built-ins copy large values in.
    "const hog = []; try { for (;;) hog.push('x'.repeat(1 << 16) + hog.length) } catch (e) {} return atob(btoa('y'.repeat(1 << 20)))",
    "const hog = []; try { for (;;) hog.push(new Uint8Array(1 << 16)) } catch (e) {} ld.log('z'.repeat(50000)); return [1, 2, 3]",
    "const hog = []; try { for (;;) hog.push({ a: hog.length }) } catch (e) {} await ld.wait(1); return 'x'.repeat(1 << 20)",
  ];
  for (const code of attacks) {
    const cm = await pool.acquire(8 * MiB);
    const out = await runSandbox(cm, request(code, { memoryBytes: 8 * MiB }), LIMITS);
    t.equal(out.error?.kind, 'memory-limit', code.slice(0, 60));
    t.equal(pool.release(cm), false, 'the exhausted module is not reused');
    for (let i = 0; i < 2; i++) {
      const next = await pool.acquire(8 * MiB);
      t.equal((await runSandbox(next, request(EXACT_MATH, { memoryBytes: 8 * MiB }), LIMITS)).resultJson, EXACT_MATH_RESULT);
      pool.release(next);
    }
  }
});

t.test("Math.random differs between calls (and is not the snapshot's sequence)", async (t) => {
  const cm = await createCappedModule(64 * MiB);
  const seen = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const out = await run(cm, 'return [Math.random(), Math.random(), Math.random()]');
    const values = JSON.parse(out.resultJson!) as number[];
    for (const v of values) t.ok(v >= 0 && v < 1, 'in [0, 1)');
    seen.add(out.resultJson!);
  }
  t.equal(seen.size, 20, 'every call drew its own numbers');
  const spread = JSON.parse(
    (
      await run(
        cm,
        'const a = []; for (let i = 0; i < 10000; i++) a.push(Math.random()); return [Math.min(...a), Math.max(...a), a.reduce((s, x) => s + x, 0) / a.length]',
      )
    ).resultJson!,
  ) as number[];
  t.ok(spread[0]! < 0.01 && spread[1]! > 0.99 && Math.abs(spread[2]! - 0.5) < 0.02, `uniform enough: ${spread.join(', ')}`);
});

t.test('what one call writes is unreadable to the next, and gone from memory', async (t) => {
  const cm = await createCappedModule(64 * MiB);
  const marker = 'MARKER-7f3a9c1e-of-call-one';
  const first = await run(
    cm,
    `const m = '${marker}';
     data.input.m = m;
     try { Object.prototype.m = m } catch (e) {}
     try { globalThis.keep = m } catch (e) {}
     const big = m.repeat(1000);
     return big.length > 0 ? 'written' : '''`,
  );
  t.not(first.error?.kind, 'memory-limit');
  t.ok(findInMemory(cm, marker) >= 0, 'the marker is in memory after its call');
  const second = await run(cm, "return [data.input.m, ({}).m, typeof keep, Object.keys(globalThis).includes('keep')]");
  t.equal(second.resultJson, JSON.stringify([null, null, 'undefined', false]));
  cm.realm!.restoreForTest();
  t.equal(findInMemory(cm, marker), -1, 'no byte of the marker is left in the module');
  t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'byte-identical to the snapshot');
});

t.test('memory a call grew is reset for the next call', async (t) => {
  const cm = await createCappedModule(64 * MiB);
  await run(cm, 'return 1');
  const before = cm.memory.buffer.byteLength;
  const grown = await run(cm, 'const a = new Uint8Array(12 << 20); a.fill(7); return a.length');
  t.equal(grown.resultJson, String(12 << 20));
  t.ok(cm.memory.buffer.byteLength > before, 'the module memory grew');
  cm.realm!.restoreForTest();
  t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'the realm is byte-identical again, the grown part zeroed');
  t.equal((await run(cm, EXACT_MATH)).resultJson, EXACT_MATH_RESULT);
});

t.test('deep recursion stays inside the restored stack window', async (t) => {
  const cm = await createCappedModule(64 * MiB);
  for (const code of [
    'function f(n) { return f(n + 1) + 1 } return f(0)',
    "return JSON.parse('['.repeat(100000))",
    'const a = []; let x = a; for (let i = 0; i < 100000; i++) { const b = []; x.push(b); x = b } return String(a)',
  ]) {
    const out = await run(cm, code);
    t.ok(out.error, `${code.slice(0, 30)} fails: ${out.error?.message}`);
    if (cm.broken) continue;
    cm.realm!.restoreForTest();
    t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'byte-identical after the restore');
  }
});

t.test('no handle, host ref or guest memory leaks over 10k calls', async (t) => {
  const cm = await createCappedModule(64 * MiB);
  const codes = [
    'return 1',
    "ld.log('x', {a: 1}); return atob(btoa('hello'))",
    'await ld.wait(0); return [1, 2]',
    "throw new TypeError('nope')",
    'return 1 +',
    'return Buffer.from([1, 2, 3])',
    'await new Promise(() => {})',
  ];
  await run(cm, 'return 1');
  const refs = cm.realm!.rt.hostRefs as unknown as { nextId: number; freelist: unknown[] };
  const startId = refs.nextId;
  for (let i = 0; i < 10_000; i++) await run(cm, codes[i % codes.length]!);
  t.equal(refs.nextId, startId, 'no host reference was created by a call');
  t.equal(cm.broken, false);
  cm.realm!.restoreForTest();
  t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'the guest side is byte-identical after 10k calls');
  t.equal((await run(cm, EXACT_MATH)).resultJson, EXACT_MATH_RESULT);
});

t.test("the technique's assumptions hold for the pinned QuickJS build", async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
  t.equal(pkg.dependencies['quickjs-emscripten'], '0.32.0', 'quickjs-emscripten is pinned exactly');
  t.equal(pkg.dependencies['@jitl/quickjs-wasmfile-release-sync'], '0.32.0', 'the binary the snapshot reads is pinned exactly');
  const build = loadQuickJSBuild();
  t.ok(build.dataEnd <= build.stackBottom, 'static data ends below the C stack');
  const cm = await createCappedModule(64 * MiB);
  t.ok(cm.breakAddress >= 1024 && cm.breakAddress < build.stackBottom, 'the allocator break is a static variable');
  const brk = new Uint32Array(cm.memory.buffer)[cm.breakAddress >>> 2]!;
  t.ok(brk >= build.stackTop && brk <= cm.memory.buffer.byteLength, 'it points above the stack, inside memory');
  await run(cm, 'return 1');
  cm.realm!.restoreForTest();
  t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'a restore gives back the snapshot byte for byte');
});
