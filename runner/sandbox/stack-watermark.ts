import { EXTERNAL_KIND_GLOBAL, OP, SECTION, type SectionSpan, s32Bytes, sectionsOf, skipImmediates, u32Bytes, VALTYPE_I32, WasmReader } from './wasm-binary.js';

/**
 * The C stack's low-water mark, added to the QuickJS build so that the snapshot restore puts back only
 * the stack a call used (memory-snapshot.ts) instead of the whole window QuickJS's stack limit allows:
 * zeroing 1.3 MiB per call was ~15 µs, two thirds of the restore.
 *
 * In emscripten's output the C stack pointer is the module's first mutable i32 global, and the stack is
 * only ever moved by `global.set` of that global, inside the module (prologues, epilogues, `alloca`,
 * `stackRestore`; the host calls the module's exports for those, and the global is not exported). So,
 * after every such `global.set`, the rewrite adds:
 *
 *     global.get $sp  global.get $low  i32.lt_u  if  global.get $sp  global.set $low  end
 *
 * `$low` is a new global, exported as {@link STACK_LOW_EXPORT}. Host code cannot write into the module's
 * globals except through that export, and the guest cannot reach a global at all: no store into linear
 * memory can change it. What the low mark does not see is LLVM's red zone: a leaf function may use up
 * to 128 bytes below the stack pointer without moving it (WebAssemblyFrameLowering), which the restore
 * covers with a margin (memory-snapshot.ts).
 */
export const STACK_LOW_EXPORT = 'ldbox_stack_low';

export interface WatermarkedBinary {
  bytes: Uint8Array<ArrayBuffer>;
  /** How many `global.set` of the stack pointer were instrumented (the test checks it is not zero). */
  sites: number;
  /** The stack pointer's initial value: the top of the C stack. */
  stackTop: number;
}

export function addStackLowWatermark(bytes: Uint8Array): WatermarkedBinary {
  const sections = sectionsOf(bytes);
  const find = (id: number): SectionSpan => {
    const found = sections.filter((s) => s.id === id);
    if (found.length !== 1) throw new Error(`the QuickJS binary has ${found.length} sections of id ${id}, expected one`);
    return found[0]!;
  };
  const importedGlobals = sections.some((s) => s.id === SECTION.import) ? countImportedGlobals(bytes, find(SECTION.import)) : 0;
  const globals = readGlobals(bytes, find(SECTION.global));
  const sp = importedGlobals + globals.stackPointerAt;
  const low = importedGlobals + globals.count;

  const exports = rewriteExports(bytes, find(SECTION.export), sp, low);
  const globalSection = appendGlobal(bytes, find(SECTION.global), globals.count, globals.stackTop);
  const code = rewriteCode(bytes, find(SECTION.code), sp, low);

  const replaced = new Map<number, number[] | Uint8Array>([
    [SECTION.global, globalSection],
    [SECTION.export, exports],
    [SECTION.code, code.section],
  ]);
  const parts: Uint8Array[] = [bytes.subarray(0, 8)];
  for (const s of sections) {
    const replacement = s.id === SECTION.custom ? undefined : replaced.get(s.id);
    if (!replacement) {
      parts.push(bytes.subarray(s.start, s.end));
      continue;
    }
    parts.push(Uint8Array.from([s.id, ...u32Bytes(replacement.length)]), Uint8Array.from(replacement));
  }
  return { bytes: Buffer.concat(parts), sites: code.sites, stackTop: globals.stackTop };
}

function countImportedGlobals(bytes: Uint8Array, section: SectionSpan): number {
  const r = new WasmReader(bytes);
  r.pos = section.contentStart;
  const count = r.u32();
  let globals = 0;
  for (let i = 0; i < count; i++) {
    r.name();
    r.name();
    const kind = r.byte();
    if (kind === 0) r.u32();
    else if (kind === 1) {
      r.byte();
      skipLimits(r);
    } else if (kind === 2) skipLimits(r);
    else if (kind === EXTERNAL_KIND_GLOBAL) {
      r.pos += 2;
      globals++;
    } else throw new Error(`unsupported import kind ${kind} in the QuickJS binary`);
  }
  return globals;
}

function skipLimits(r: WasmReader): void {
  const flags = r.u32();
  r.u32();
  if (flags & 1) r.u32();
}

/** The defined globals: how many, which is the stack pointer (the first mutable i32) and its value. */
function readGlobals(bytes: Uint8Array, section: SectionSpan): { count: number; stackPointerAt: number; stackTop: number } {
  const r = new WasmReader(bytes);
  r.pos = section.contentStart;
  const count = r.u32();
  let stackPointerAt = -1;
  let stackTop = 0;
  for (let i = 0; i < count; i++) {
    const type = r.byte();
    const mutable = r.byte() === 1;
    const initAt = r.pos;
    const first = r.byte();
    if (stackPointerAt < 0 && type === VALTYPE_I32 && mutable) {
      if (first !== OP.i32Const) throw new Error('the QuickJS stack pointer does not start as a constant');
      stackPointerAt = i;
      stackTop = r.s32();
      r.pos = initAt + 1;
    }
    for (let op = first; op !== OP.end; op = r.byte()) skipImmediates(r, op);
  }
  if (stackPointerAt < 0) throw new Error('the QuickJS binary has no stack-pointer global');
  return { count, stackPointerAt, stackTop };
}

function appendGlobal(bytes: Uint8Array, section: SectionSpan, count: number, initial: number): number[] {
  const r = new WasmReader(bytes);
  r.pos = section.contentStart;
  r.u32();
  const entries = bytes.subarray(r.pos, section.end);
  return [...u32Bytes(count + 1), ...entries, VALTYPE_I32, 1, OP.i32Const, ...s32Bytes(initial), OP.end];
}

function rewriteExports(bytes: Uint8Array, section: SectionSpan, sp: number, low: number): number[] {
  const r = new WasmReader(bytes);
  r.pos = section.contentStart;
  const count = r.u32();
  const entriesAt = r.pos;
  for (let i = 0; i < count; i++) {
    const name = r.name();
    const kind = r.byte();
    const index = r.u32();
    // The host could move the stack pointer without the low mark seeing it.
    if (kind === EXTERNAL_KIND_GLOBAL && index === sp) throw new Error('the QuickJS binary exports its stack pointer');
    if (name === STACK_LOW_EXPORT) throw new Error(`the QuickJS binary already exports ${STACK_LOW_EXPORT}`);
  }
  const name = Buffer.from(STACK_LOW_EXPORT, 'utf8');
  return [...u32Bytes(count + 1), ...bytes.subarray(entriesAt, section.end), ...u32Bytes(name.length), ...name, EXTERNAL_KIND_GLOBAL, ...u32Bytes(low)];
}

function rewriteCode(bytes: Uint8Array, section: SectionSpan, sp: number, low: number): { section: Uint8Array; sites: number } {
  const spGet = [OP.globalGet, ...u32Bytes(sp)];
  const lowGet = [OP.globalGet, ...u32Bytes(low)];
  const lowSet = [OP.globalSet, ...u32Bytes(low)];
  const track = Uint8Array.from([...spGet, ...lowGet, OP.i32LtU, OP.if, OP.blockTypeEmpty, ...spGet, ...lowSet, OP.end]);

  const r = new WasmReader(bytes);
  r.pos = section.contentStart;
  const count = r.u32();
  const out: Uint8Array[] = [Uint8Array.from(u32Bytes(count))];
  let sites = 0;
  for (let f = 0; f < count; f++) {
    const size = r.u32();
    const bodyStart = r.pos;
    const bodyEnd = bodyStart + size;
    const locals = r.u32();
    for (let i = 0; i < locals; i++) {
      r.u32();
      r.byte();
    }
    const pieces: Uint8Array[] = [];
    let copiedTo = bodyStart;
    while (r.pos < bodyEnd) {
      const op = r.byte();
      if (op !== OP.globalSet) {
        skipImmediates(r, op);
        continue;
      }
      if (r.u32() !== sp) continue;
      pieces.push(bytes.subarray(copiedTo, r.pos), track);
      copiedTo = r.pos;
      sites++;
    }
    if (r.pos !== bodyEnd) throw new Error(`function ${f} of the QuickJS binary did not decode to its end`);
    pieces.push(bytes.subarray(copiedTo, bodyEnd));
    const length = pieces.reduce((n, p) => n + p.length, 0);
    out.push(Uint8Array.from(u32Bytes(length)), ...pieces);
  }
  if (r.pos !== section.end) throw new Error('the QuickJS code section did not decode to its end');
  return { section: Buffer.concat(out), sites };
}
