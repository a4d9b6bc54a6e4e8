import { createRequire } from 'node:module';
import type { RecordBatch, Schema } from 'apache-arrow';
import { arrowLib } from './format-libs.js';

const require = createRequire(import.meta.url);

/** The pieces of apache-arrow's IPC writer this uses (internal modules of the pinned apache-arrow 21.2.0). */
interface Assembled {
  byteLength: number;
  nodes: unknown[];
  bufferRegions: unknown[];
  buffers: ArrayBufferView[];
  variadicBufferCounts: number[];
}
interface ArrowIpcInternals {
  VectorAssembler: { assemble(batch: RecordBatch): Assembled };
  Message: { from(header: unknown, bodyLength: number): unknown; encode(message: unknown): Uint8Array };
  RecordBatch: new (length: number, nodes: unknown[], buffers: unknown[], compression: null, variadicBufferCounts: number[]) => unknown;
}

let internals: ArrowIpcInternals | undefined;

function ipcInternals(): ArrowIpcInternals {
  arrowLib();
  if (!internals) {
    const { VectorAssembler } = require('apache-arrow/visitor/vectorassembler') as Pick<ArrowIpcInternals, 'VectorAssembler'>;
    const { Message, RecordBatch } = require('apache-arrow/ipc/metadata/message') as Pick<ArrowIpcInternals, 'Message' | 'RecordBatch'>;
    internals = { VectorAssembler, Message, RecordBatch };
  }
  return internals;
}

/**
 * Encodes one record batch as a complete Arrow IPC stream (schema message, batch message, end of
 * stream) into a buffer reused for every batch, for `pw.Table.fromIPCStream`, which copies it into
 * wasm memory at once. `tableToIPC` would allocate the stream afresh for every chunk (see ChunkArena
 * for why that matters).
 *
 * It does what apache-arrow's RecordBatchStreamWriter does for a batch (VectorAssembler for the body
 * layout, Message.encode for the flatbuffer, 8-byte alignment), with apache-arrow's own internal
 * classes, so the bytes are the same as `tableToIPC` gives (checked in the tests).
 */
export class IpcChunkEncoder {
  private buf = new Uint8Array(1 << 20);
  private readonly prefix: Uint8Array;

  constructor(schema: Schema) {
    const A = arrowLib();
    const empty = A.tableToIPC(new A.Table(schema), 'stream');
    this.prefix = empty.slice(0, empty.length - 8);
  }

  /** The stream of `batch`, as a view valid until the next call. */
  encode(batch: RecordBatch): Uint8Array {
    const { VectorAssembler, Message, RecordBatch: RecordBatchHeader } = ipcInternals();
    const { byteLength, nodes, bufferRegions, buffers, variadicBufferCounts } = VectorAssembler.assemble(batch);
    const header = new RecordBatchHeader(batch.numRows, nodes, bufferRegions, null, variadicBufferCounts);
    const flatbuffer = Message.encode(Message.from(header, byteLength));
    const aligned = (flatbuffer.byteLength + 8 + 7) & ~7;
    const total = this.prefix.length + aligned + byteLength + 8;
    if (total > this.buf.length) this.buf = new Uint8Array(Math.max(total, this.buf.length * 2));
    const out = this.buf;
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    let p = 0;
    out.set(this.prefix, p);
    p += this.prefix.length;
    view.setInt32(p, -1, true);
    view.setInt32(p + 4, aligned - 8, true);
    out.set(flatbuffer, p + 8);
    out.fill(0, p + 8 + flatbuffer.byteLength, p + aligned);
    p += aligned;
    const bodyStart = p;
    for (const b of buffers) {
      const n = b.byteLength;
      if (n === 0) continue;
      out.set(new Uint8Array(b.buffer, b.byteOffset, n), p);
      p += n;
      const padded = (n + 7) & ~7;
      out.fill(0, p, p + padded - n);
      p += padded - n;
    }
    if (p - bodyStart !== byteLength) throw new Error(`IpcChunkEncoder: body is ${p - bodyStart} bytes, the message says ${byteLength}`);
    view.setInt32(p, -1, true);
    view.setInt32(p + 4, 0, true);
    return out.subarray(0, p + 8);
  }
}
