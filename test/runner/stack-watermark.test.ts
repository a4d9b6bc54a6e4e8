/**
 * The C stack's low-water mark added to the QuickJS build (runner/sandbox/stack-watermark.ts): the
 * snapshot restore trusts it to know how much stack a call used, so every move of the stack pointer
 * must lower it, and the rewrite must refuse a binary it does not fully understand.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import t from 'tap';
import { runSandbox } from '../../runner/sandbox/index.js';
import { loadQuickJSBuild } from '../../runner/sandbox/quickjs-build.js';
import { addStackLowWatermark, STACK_LOW_EXPORT } from '../../runner/sandbox/stack-watermark.js';
import { OP, SECTION, sectionsOf, skipImmediates, u32Bytes, WasmReader } from '../../runner/sandbox/wasm-binary.js';
import { createCappedModule } from '../../runner/sandbox/wasm-modules.js';
import { inProcessLimits, MiB, sandboxRequest } from '../helpers/sandbox-calls.js';

const STACK_TOP = 65536;

/** A module from its sections (id, contents), each given its size. */
function moduleOf(sections: Array<[number, number[]]>): Uint8Array {
  const out = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  for (const [id, body] of sections) out.push(id, ...u32Bytes(body.length), ...body);
  return Uint8Array.from(out);
}

/** One exported function `f(n)`: moves the stack pointer (global 0) down by n, reads it, moves it back. */
function stackMover(body: number[]): Uint8Array {
  const code = [0x00, ...body, OP.end];
  return moduleOf([
    [1, [0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f]], // type: (i32) -> i32
    [3, [0x01, 0x00]], // function 0 has type 0
    [SECTION.global, [0x01, 0x7f, 0x01, OP.i32Const, 0x80, 0x80, 0x04, OP.end]], // mutable i32 = 65536
    [SECTION.export, [0x01, 0x01, 0x66, 0x00, 0x00]], // "f" = function 0
    [SECTION.code, [0x01, ...u32Bytes(code.length), ...code]],
  ]);
}

const MOVE_DOWN_AND_BACK = [
  ...[OP.globalGet, 0x00, 0x20, 0x00, 0x6b, OP.globalSet, 0x00], // sp = sp - n
  ...[OP.globalGet, 0x00], // the result: the lowered sp
  ...[OP.i32Const, 0x80, 0x80, 0x04, OP.globalSet, 0x00], // sp = 65536
];

t.test('every move of the stack pointer lowers the mark, and only the mark says how low it went', async (t) => {
  const { bytes, sites, stackTop } = addStackLowWatermark(stackMover(MOVE_DOWN_AND_BACK));
  t.equal(sites, 2);
  t.equal(stackTop, STACK_TOP);
  const { instance } = await WebAssembly.instantiate(bytes);
  const f = instance.exports.f as (n: number) => number;
  const low = instance.exports[STACK_LOW_EXPORT] as WebAssembly.Global;
  t.equal(low.value, STACK_TOP, 'the mark starts at the top of the stack');
  t.equal(f(100), STACK_TOP - 100);
  t.equal(low.value, STACK_TOP - 100, 'it follows the stack pointer down');
  t.equal(f(10), STACK_TOP - 10);
  t.equal(low.value, STACK_TOP - 100, 'and not back up');
  low.value = STACK_TOP;
  f(5);
  t.equal(low.value, STACK_TOP - 5, 'reset by the host, it starts over');
});

t.test('a binary the rewrite does not fully understand is refused, not guessed at', async (t) => {
  // v128.const (SIMD): its 16 immediate bytes could hold a global.set opcode.
  const simd = [0xfd, 0x0c, ...new Array<number>(16).fill(OP.globalSet), 0x1a];
  t.throws(() => addStackLowWatermark(stackMover([...simd, ...MOVE_DOWN_AND_BACK])), /unsupported WebAssembly opcode 0xfd/);
  const exported = moduleOf([
    [SECTION.global, [0x01, 0x7f, 0x01, OP.i32Const, 0x00, OP.end]],
    [SECTION.export, [0x01, 0x02, 0x73, 0x70, 0x03, 0x00]], // "sp" = global 0
    [SECTION.code, [0x00]],
  ]);
  t.throws(() => addStackLowWatermark(exported), /exports its stack pointer/, 'the host could move an exported stack pointer unseen');
  t.throws(() => addStackLowWatermark(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8])), /not a WebAssembly binary/);
});

/** Counts `global.set` by global index over every function body of a binary. */
function globalSets(bytes: Uint8Array): Map<number, number> {
  const counts = new Map<number, number>();
  const code = sectionsOf(bytes).find((s) => s.id === SECTION.code)!;
  const r = new WasmReader(bytes);
  r.pos = code.contentStart;
  const functions = r.u32();
  for (let f = 0; f < functions; f++) {
    const end = r.u32() + r.pos;
    const locals = r.u32();
    for (let i = 0; i < locals; i++) {
      r.u32();
      r.byte();
    }
    while (r.pos < end) {
      const op = r.byte();
      if (op !== OP.globalSet) skipImmediates(r, op);
      else {
        const index = r.u32();
        counts.set(index, (counts.get(index) ?? 0) + 1);
      }
    }
  }
  return counts;
}

t.test('in the pinned QuickJS build, every global.set of the stack pointer is followed by the mark', async (t) => {
  const original = readFileSync(createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm'));
  const { bytes, sites } = addStackLowWatermark(original);
  t.ok(WebAssembly.validate(bytes), 'the rewritten binary is valid');
  const before = globalSets(original);
  const after = globalSets(bytes);
  t.same([...before.keys()], [0], 'the build sets one global: the stack pointer');
  t.equal(sites, before.get(0), 'each of its sets was instrumented');
  t.equal(after.get(0), before.get(0), 'no set of the stack pointer was added or lost');
  t.equal(after.get(1), sites, 'each is followed by one set of the mark');
});

t.test('a deep call lowers the mark; the restore puts back the stack it used and resets the mark', async (t) => {
  const build = loadQuickJSBuild();
  const cm = await createCappedModule(64 * MiB);
  const limits = inProcessLimits();
  await runSandbox(cm, sandboxRequest('return 1'), limits);
  const shallow = build.stackTop - (cm.stackLow.value as number);
  const deep = await runSandbox(cm, sandboxRequest('function f(n) { return n === 0 ? 0 : 1 + f(n - 1) } return f(1000)'), limits);
  t.equal(deep.resultJson, '1000');
  const used = build.stackTop - (cm.stackLow.value as number);
  t.ok(used > shallow * 10 && used > 100_000, `1000 frames used ${used} bytes of stack, \`return 1\` ${shallow}`);
  cm.realm!.restoreForTest();
  t.equal(cm.stackLow.value, build.stackTop, 'the mark is back at the top');
  t.equal(cm.realm!.differenceFromSnapshot(), undefined, 'the memory is byte-identical to the snapshot');
});
