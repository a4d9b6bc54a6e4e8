import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { addStackLowWatermark, STACK_LOW_EXPORT } from './stack-watermark.js';
import { OP, SECTION, sectionsOf, VALTYPE_I32, WasmReader } from './wasm-binary.js';

/**
 * Facts about the one QuickJS WebAssembly build the sandbox runs (quickjs-emscripten's release-sync
 * variant, pinned in package.json), read from the binary itself rather than assumed.
 *
 * Emscripten lays linear memory out as: static data (initialised segments, then zeroed bss, from address
 * 1024), then the C stack (growing down from `stackTop`), then the heap (from the allocator's initial
 * break, upwards). The snapshot restore (memory-snapshot.ts) depends on that layout, so it is derived
 * here and checked; test/runner/snapshot-assumptions.test.ts fails if an upgrade changes it.
 */
export interface QuickJSBuild {
  /**
   * Compiled once per thread from the binary with the stack low-water mark added (stack-watermark.ts):
   * every module instance shares it (instantiating skips the compile).
   */
  readonly wasmModule: WebAssembly.Module;
  /** The name of the export that is the stack low-water mark (a mutable i32 global). */
  readonly stackLowExport: string;
  /** The initial value of the stack-pointer global: the top of the C stack. */
  readonly stackTop: number;
  /** The end of the initialised data segments (bss follows, up to the bottom of the C stack). */
  readonly dataEnd: number;
  /** The bottom of the C stack: everything below it is static data. */
  readonly stackBottom: number;
}

/**
 * The C stack size the build was linked with (quickjs-emscripten passes -sSTACK_SIZE=5MB). It is not
 * recorded in the binary; `loadQuickJSBuild` checks it is consistent with what is (data below it).
 */
export const C_STACK_BYTES = 5 * 1024 * 1024;

let build: QuickJSBuild | undefined;

export function loadQuickJSBuild(): QuickJSBuild {
  if (build) return build;
  const require = createRequire(import.meta.url);
  const bytes = readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'));
  const { stackTop, dataEnd } = readLayout(bytes);
  const stackBottom = stackTop - C_STACK_BYTES;
  if (!(dataEnd > 0 && dataEnd <= stackBottom)) {
    throw new Error(`unexpected QuickJS memory layout: data ends at ${dataEnd}, stack ${stackBottom}–${stackTop}`);
  }
  const watermarked = addStackLowWatermark(bytes);
  if (watermarked.stackTop !== stackTop || watermarked.sites === 0) throw new Error('the QuickJS stack pointer could not be instrumented');
  build = { wasmModule: new WebAssembly.Module(watermarked.bytes), stackLowExport: STACK_LOW_EXPORT, stackTop, dataEnd, stackBottom };
  return build;
}

/** Reads the stack pointer's initial value (the first mutable i32 global) and the end of the data segments. */
export function readLayout(bytes: Uint8Array): { stackTop: number; dataEnd: number } {
  let stackTop = 0;
  let dataEnd = 0;
  for (const section of sectionsOf(bytes)) {
    const r = new WasmReader(bytes);
    r.pos = section.contentStart;
    if (section.id === SECTION.global) stackTop = readStackPointer(r);
    if (section.id === SECTION.data) dataEnd = readDataEnd(r);
  }
  if (stackTop === 0 || dataEnd === 0) throw new Error('the QuickJS binary has no stack-pointer global or no data segments');
  return { stackTop, dataEnd };
}

function readStackPointer(r: WasmReader): number {
  const count = r.u32();
  for (let i = 0; i < count; i++) {
    const type = r.byte();
    const mutable = r.byte() === 1;
    const op = r.byte();
    if (op !== OP.i32Const) return 0;
    const value = r.s32();
    if (r.byte() !== OP.end) return 0;
    if (type === VALTYPE_I32 && mutable) return value;
  }
  return 0;
}

function readDataEnd(r: WasmReader): number {
  const count = r.u32();
  let end = 0;
  for (let i = 0; i < count; i++) {
    const flags = r.u32();
    if (flags !== 0) throw new Error(`unexpected data segment kind ${flags} in the QuickJS binary`);
    if (r.byte() !== OP.i32Const) throw new Error('unexpected data segment offset in the QuickJS binary');
    const offset = r.s32();
    r.byte(); // end
    const size = r.u32();
    r.pos += size;
    end = Math.max(end, offset + size);
  }
  return end;
}
