/**
 * How a batch of calls and a batch of replies cross a call lane (call-lane.ts, worker-lane.ts) in one
 * message. The common case — a wire call of a few hundred bytes, its reply the same — is packed into one
 * ArrayBuffer per batch that is moved, not cloned: structured-cloning an object, a typed array and a
 * SharedArrayBuffer per call was the largest single cost of the runner's main thread (~13 % of its time
 * at 64 calls in flight). Anything else (a sandbox task, a body large enough to be moved on its own, a
 * reply other than an answer) travels as a plain object beside it.
 *
 * A call's cancel flag does not travel: both sides hold views of the pool's flag table (flag-table.ts)
 * and the call names its slot.
 *
 * Packed call: placement u32, slot u32, encoding u8 (0 protobuf, 1 JSON), grpcFramed u8, 2 bytes unused,
 * submittedAt f64, deadlineAt f64 (NaN: none), body length u32, 4 bytes unused, the body, padding to 8.
 * Packed answer: placement u32, outcome u8 (0 ok, 1 error), deadlineExceeded u8, requestId length u16,
 * queueTimeMs f64, body length u32, errorKind u8 (0 none, else 1 + its index in {@link ERROR_KINDS}),
 * 3 bytes unused, memoryUsedBytes f64 (NaN: none), the request id (UTF-8), the body, padding to 8.
 */
import type { UserErrorKind } from '../sandbox/index.js';
import type { WireAnswer, WireTask, WorkerReply, WorkerTask } from './worker-task.js';

/** The error kinds a packed answer can name, in their packed order (1 + index). */
const ERROR_KINDS: readonly UserErrorKind[] = ['thrown', 'syntax', 'timeout', 'memory-limit', 'invalid-result'];

/** A task as it travels: without its cancel flag (the slot names it). */
export type TaskOnLane = DistributiveOmit<WorkerTask, 'cancelFlag'>;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

export interface LaneBatchMessage {
  packed: ArrayBuffer | undefined;
  others: { placement: number; task: TaskOnLane }[];
}

export interface LaneRepliesMessage {
  packed: ArrayBuffer | undefined;
  others: { placement: number; reply: WorkerReply }[];
}

const CALL_HEADER = 40;
const ANSWER_HEADER = 32;
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

const padded = (n: number): number => (n + 7) & ~7;

/** Whether a wire call goes packed: not when its body is moved on its own (`transfer`). */
export function packsCall(task: WorkerTask, transfer: ArrayBuffer | undefined): task is WireTask {
  return task.kind === 'wire' && transfer === undefined;
}

/** Packs the wire calls of a batch into one buffer. */
export function packCalls(calls: { placement: number; task: WireTask }[]): ArrayBuffer {
  let size = 0;
  for (const { task } of calls) size += CALL_HEADER + padded(task.body.byteLength);
  const buffer = new ArrayBuffer(size);
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  let at = 0;
  for (const { placement, task } of calls) {
    view.setUint32(at, placement, true);
    view.setUint32(at + 4, task.slot, true);
    view.setUint8(at + 8, task.encoding === 'json' ? 1 : 0);
    view.setUint8(at + 9, task.grpcFramed ? 1 : 0);
    view.setFloat64(at + 16, task.submittedAt, true);
    view.setFloat64(at + 24, task.deadlineAt ?? Number.NaN, true);
    view.setUint32(at + 32, task.body.byteLength, true);
    bytes.set(task.body, at + CALL_HEADER);
    at += CALL_HEADER + padded(task.body.byteLength);
  }
  return buffer;
}

/** Reads packed calls back; each body is a view into `buffer`. */
export function unpackCalls(buffer: ArrayBuffer, flagOf: (slot: number) => Int32Array, into: { id: number; task: WorkerTask }[]): void {
  const view = new DataView(buffer);
  for (let at = 0; at < buffer.byteLength; ) {
    const slot = view.getUint32(at + 4, true);
    const deadlineAt = view.getFloat64(at + 24, true);
    const length = view.getUint32(at + 32, true);
    into.push({
      id: view.getUint32(at, true),
      task: {
        kind: 'wire',
        slot,
        cancelFlag: flagOf(slot),
        encoding: view.getUint8(at + 8) === 1 ? 'json' : 'proto',
        grpcFramed: view.getUint8(at + 9) === 1,
        submittedAt: view.getFloat64(at + 16, true),
        deadlineAt: Number.isNaN(deadlineAt) ? undefined : deadlineAt,
        body: new Uint8Array(buffer, at + CALL_HEADER, length),
      },
    });
    at += CALL_HEADER + padded(length);
  }
}

/** Whether a reply goes packed: an answer without a host fault whose body is not moved on its own. */
export function packsReply(reply: WorkerReply, transfer: ArrayBuffer | undefined): reply is WireAnswer {
  return reply.status === 'answered' && reply.internalFault === undefined && transfer === undefined;
}

/** Packs answers into one buffer. */
export function packAnswers(answers: { placement: number; reply: WireAnswer }[]): ArrayBuffer {
  const ids = answers.map(({ reply }) => utf8.encode(reply.requestId));
  let size = 0;
  for (let i = 0; i < answers.length; i++) size += ANSWER_HEADER + padded(ids[i]!.byteLength + answers[i]!.reply.body.byteLength);
  const buffer = new ArrayBuffer(size);
  const view = new DataView(buffer);
  const bytes = new Uint8Array(buffer);
  let at = 0;
  answers.forEach(({ placement, reply }, i) => {
    const id = ids[i]!;
    view.setUint32(at, placement, true);
    view.setUint8(at + 4, reply.outcome === 'error' ? 1 : 0);
    view.setUint8(at + 5, reply.deadlineExceeded ? 1 : 0);
    view.setUint16(at + 6, id.byteLength, true);
    view.setFloat64(at + 8, reply.queueTimeMs, true);
    view.setUint32(at + 16, reply.body.byteLength, true);
    view.setUint8(at + 20, reply.errorKind === undefined ? 0 : ERROR_KINDS.indexOf(reply.errorKind) + 1);
    view.setFloat64(at + 24, reply.memoryUsedBytes ?? Number.NaN, true);
    bytes.set(id, at + ANSWER_HEADER);
    bytes.set(reply.body, at + ANSWER_HEADER + id.byteLength);
    at += ANSWER_HEADER + padded(id.byteLength + reply.body.byteLength);
  });
  return buffer;
}

/** Reads packed answers back; each body is a view into `buffer`. */
export function unpackAnswers(buffer: ArrayBuffer, each: (placement: number, reply: WireAnswer) => void): void {
  const view = new DataView(buffer);
  for (let at = 0; at < buffer.byteLength; ) {
    const idLength = view.getUint16(at + 6, true);
    const bodyLength = view.getUint32(at + 16, true);
    const idAt = at + ANSWER_HEADER;
    const reply: WireAnswer = {
      status: 'answered',
      outcome: view.getUint8(at + 4) === 1 ? 'error' : 'ok',
      deadlineExceeded: view.getUint8(at + 5) === 1,
      queueTimeMs: view.getFloat64(at + 8, true),
      requestId: utf8Decoder.decode(new Uint8Array(buffer, idAt, idLength)),
      body: new Uint8Array(buffer, idAt + idLength, bodyLength),
    };
    const errorKind = ERROR_KINDS[view.getUint8(at + 20) - 1];
    if (errorKind !== undefined) reply.errorKind = errorKind;
    const memoryUsedBytes = view.getFloat64(at + 24, true);
    if (!Number.isNaN(memoryUsedBytes)) reply.memoryUsedBytes = memoryUsedBytes;
    each(view.getUint32(at, true), reply);
    at += ANSWER_HEADER + padded(idLength + bodyLength);
  }
}
