import { createRequire } from 'node:module';
import type * as ArrowLib from 'apache-arrow';
import type * as ParquetWasmLib from 'parquet-wasm';

/**
 * apache-arrow and parquet-wasm, loaded on first use. Loading both costs about 300 ms and 35 MiB per
 * worker thread (parquet-wasm compiles and instantiates its 5 MB module at load), which a worker that
 * never converts anything should not pay. Both are loaded with `require` so that a synchronous
 * built-in can load them: parquet-wasm's Node entry is CommonJS and instantiates itself synchronously
 * (the browser-style `await init()` does not exist there, see the format notes, pitfall 1), and only
 * that one entry is ever loaded, so there is exactly one wasm instance per thread.
 */
const require = createRequire(import.meta.url);

export type Arrow = typeof ArrowLib;
export type ParquetWasm = typeof ParquetWasmLib;

let arrow: Arrow | undefined;
let parquetWasm: ParquetWasm | undefined;

export function arrowLib(): Arrow {
  return (arrow ??= require('apache-arrow') as Arrow);
}

export function parquetWasmLib(): ParquetWasm {
  return (parquetWasm ??= require('parquet-wasm') as ParquetWasm);
}

/**
 * parquet-wasm memory kept between conversions. Above it, the instance is dropped after the
 * conversion and the next one loads a fresh instance (about 80 ms).
 */
export const PARQUET_WASM_KEEP_BYTES = 64 * 1024 * 1024;

/**
 * Drops this thread's parquet-wasm instance so that its memory can be garbage-collected: a wasm
 * memory never shrinks (format notes, pitfall 3), so after a large conversion the only way to give
 * the memory back without recycling the worker is to let go of the whole instance. It also drops an
 * instance that trapped (a Rust panic or an allocation failure leaves it in an unknown state). The
 * next `parquetWasmLib()` call instantiates a fresh one. Nothing may hold a parquet-wasm object
 * across this call.
 */
export function discardParquetWasm(): void {
  if (!parquetWasm) return;
  parquetWasm = undefined;
  const path = require.resolve('parquet-wasm');
  const mod = require.cache[path];
  if (!mod) return;
  delete require.cache[path];
  // The requiring module lists it as a child: that reference alone would keep the memory alive.
  const parents = [(mod as { parent?: NodeJS.Module | null }).parent, ...Object.values(require.cache)];
  for (const p of parents) {
    const i = p?.children.indexOf(mod) ?? -1;
    if (i >= 0) p!.children.splice(i, 1);
  }
}

/** Called after every conversion: drops the instance when it holds more than PARQUET_WASM_KEEP_BYTES. */
export function releaseParquetWasmIfLarge(): void {
  if (parquetWasmMemoryBytes() > PARQUET_WASM_KEEP_BYTES) discardParquetWasm();
}

/**
 * Bytes of WebAssembly memory parquet-wasm holds in this thread. It only ever grows (a wasm memory
 * cannot shrink), so it is the high-water mark of every conversion this thread has done; 0 before
 * the first conversion.
 */
export function parquetWasmMemoryBytes(): number {
  return parquetWasm ? parquetWasm.wasmMemory().buffer.byteLength : 0;
}
