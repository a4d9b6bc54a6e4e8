/**
 * The little of the WebAssembly binary format the sandbox needs to read and rewrite the QuickJS build
 * (quickjs-build.ts, stack-watermark.ts): sections, LEB128 integers and the immediates of every
 * instruction that build uses. https://webassembly.github.io/spec/core/binary/
 */

export const SECTION = {
  custom: 0,
  import: 2,
  global: 6,
  export: 7,
  code: 10,
  data: 11,
} as const;

export const OP = {
  end: 0x0b,
  if: 0x04,
  globalGet: 0x23,
  globalSet: 0x24,
  i32Const: 0x41,
  i32LtU: 0x49,
  blockTypeEmpty: 0x40,
} as const;

export const VALTYPE_I32 = 0x7f;
export const EXTERNAL_KIND_GLOBAL = 0x03;

export class WasmReader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.bytes.length) throw new Error('unexpected end of the WebAssembly binary');
    return this.bytes[this.pos++]!;
  }

  u32(): number {
    let result = 0;
    let shift = 0;
    let b: number;
    do {
      b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return result;
  }

  s32(): number {
    let result = 0;
    let shift = 0;
    let b: number;
    do {
      b = this.byte();
      result |= (b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    return shift < 32 && b & 0x40 ? result | (~0 << shift) : result;
  }

  /** Skips a LEB128 integer of any width. */
  skipLeb(): void {
    while (this.byte() & 0x80);
  }

  name(): string {
    const n = this.u32();
    const text = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.pos, n).toString('utf8');
    this.pos += n;
    return text;
  }
}

export function u32Bytes(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
}

export function s32Bytes(value: number): number[] {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const b = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

/** One section of a module: its id and where its contents are in the binary. */
export interface SectionSpan {
  id: number;
  /** Where the section starts (its id byte). */
  start: number;
  /** Where its contents start (after the size). */
  contentStart: number;
  end: number;
}

export function sectionsOf(bytes: Uint8Array): SectionSpan[] {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) throw new Error('not a WebAssembly binary');
  const r = new WasmReader(bytes);
  r.pos = 8; // magic and version
  const spans: SectionSpan[] = [];
  while (r.pos < bytes.length) {
    const start = r.pos;
    const id = r.byte();
    const size = r.u32();
    spans.push({ id, start, contentStart: r.pos, end: r.pos + size });
    r.pos += size;
  }
  return spans;
}

/**
 * Skips the immediates of the instruction whose opcode was just read. Covers the instructions of
 * WebAssembly 1.0 plus sign extension, non-trapping conversions, bulk memory and reference types: what
 * emscripten emits for this build. Anything else (SIMD, atomics, exceptions) is refused: the rewrite
 * must understand every byte it walks over, or it could mistake an immediate for an opcode.
 */
export function skipImmediates(r: WasmReader, op: number): void {
  if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b || op === 0xd1) return;
  if (op >= 0x45 && op <= 0xc4) return; // numeric instructions, sign extension
  switch (op) {
    case 0x02: // block
    case 0x03: // loop
    case 0x04: // if
      return skipBlockType(r);
    case 0x0c: // br
    case 0x0d: // br_if
    case 0x10: // call
    case 0x12: // return_call
    case 0x20: // local.get
    case 0x21: // local.set
    case 0x22: // local.tee
    case 0x23: // global.get
    case 0x24: // global.set
    case 0x25: // table.get
    case 0x26: // table.set
    case 0xd2: // ref.func
      return r.skipLeb();
    case 0x0e: {
      // br_table: a vector of labels and a default
      const n = r.u32();
      for (let i = 0; i <= n; i++) r.skipLeb();
      return;
    }
    case 0x11: // call_indirect: type, table
    case 0x13: // return_call_indirect
      r.skipLeb();
      return r.skipLeb();
    case 0x1c: {
      // select with types
      const n = r.u32();
      r.pos += n;
      return;
    }
    case 0x3f: // memory.size
    case 0x40: // memory.grow
      return r.skipLeb();
    case 0x41: // i32.const
    case 0x42: // i64.const
      return r.skipLeb();
    case 0x43: // f32.const
      r.pos += 4;
      return;
    case 0x44: // f64.const
      r.pos += 8;
      return;
    case 0xd0: // ref.null
      r.pos += 1;
      return;
    case 0xfc:
      return skipPrefixedFC(r);
  }
  if (op >= 0x28 && op <= 0x3e) {
    // loads and stores: alignment, offset
    r.skipLeb();
    return r.skipLeb();
  }
  throw new Error(`unsupported WebAssembly opcode 0x${op.toString(16)} at byte ${r.pos - 1}`);
}

function skipBlockType(r: WasmReader): void {
  const b = r.bytes[r.pos]!;
  if (b === 0x40 || (b >= 0x6f && b <= 0x7f)) {
    r.pos += 1;
    return;
  }
  r.skipLeb(); // a type index (s33)
}

function skipPrefixedFC(r: WasmReader): void {
  const sub = r.u32();
  if (sub <= 7) return; // non-trapping float-to-int
  switch (sub) {
    case 8: // memory.init: data, memory
    case 10: // memory.copy: memory, memory
    case 12: // table.init
    case 14: // table.copy
      r.skipLeb();
      return r.skipLeb();
    case 9: // data.drop
    case 11: // memory.fill
    case 13: // elem.drop
    case 15: // table.grow
    case 16: // table.size
    case 17: // table.fill
      return r.skipLeb();
  }
  throw new Error(`unsupported WebAssembly opcode 0xfc ${sub} at byte ${r.pos}`);
}
