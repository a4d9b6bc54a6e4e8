/**
 * What executions cost, without a hot key: every execution's cost is one message on the `CHARGES` stream,
 * and a periodic roll-up folds those messages into the workspaces' `spentUnits` (workspace-repository.ts).
 *
 * Why a ledger and not a counter: a counter per workspace (what this replaced) made every execution of a
 * busy workspace a compare-and-set on one KV key — they serialised and retried ("changed concurrently"),
 * ~11 executions/s for a burst to one workflow. Sharded counters would spread the writes, but stay two
 * writes (counter, then "charged" on the record) with a crash window between them that charges twice. A
 * message per execution is one write that is its own idempotency key:
 *
 * - subject `ldbox.charges.<workspace>.<executionId>`, published with `Nats-Expected-Last-Subject-Sequence: 0`
 *   (and `Nats-Msg-Id` = the execution id): the server stores the first charge of an execution and refuses
 *   every later one ("wrong last sequence") for as long as the stream keeps it — not only within the 2-min
 *   duplicate window. A redelivered job, a resumed execution or a stale executor charging again is refused,
 *   whatever happened in between (a crash between charging and recording included);
 * - the stream keeps charges as long as execution records are kept (LDBOX_EXECUTION_RETENTION): a job can only
 *   be redelivered while its record exists, so no charge can come back after its own has expired.
 *
 * Roll-up ({@link ChargeLedger.rollUp}, run by every executor each second): a cursor (`_rollup` in the
 * workspaces bucket, `{"seq": N}`) says that every charge up to stream sequence N is folded into its
 * workspace's record; each record says up to which sequence it counts (`rolledUpSeq`). A roll-up reads the
 * charges after the cursor, adds to each record those past its `rolledUpSeq` (a compare-and-set per
 * workspace: one write per workspace per second, not per execution), then moves the cursor (compare-and-set).
 * Roll-ups racing each other (several executors) or dying half-way fold nothing twice: a record never counts
 * a sequence at or below its `rolledUpSeq` again.
 *
 * Reading the spend exactly ({@link ChargeLedger.pendingUnits}): the record's `spentUnits` plus the charges of
 * the workspace after its `rolledUpSeq` — what the control plane reports and what the executor's
 * spending-cap check reads.
 *
 * Tests: test/executor/charging.test.ts.
 */
import type { JobPublisher } from '../nats/job-publisher.js';
import {
  DeliverPolicy,
  JetStreamApiCodes,
  type JetStreamClient,
  type JetStreamManager,
  type MsgRequest,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { ensureStream } from '../nats/streams.js';
import { decodeJson, encodeJson, isWrongRevision, unavailable } from './store-errors.js';

export const CHARGES_STREAM = 'CHARGES';
const SUBJECT_PREFIX = 'ldbox.charges.';
/** The key of the roll-up cursor in the workspaces bucket (no workspace name starts with `_`). */
export const ROLLUP_CURSOR_KEY = '_rollup';

const MS = 1_000_000;

/** The subject of one execution's charge. */
export function chargeSubject(workspace: string, executionId: string): string {
  return `${SUBJECT_PREFIX}${workspace}.${executionId}`;
}

export interface ChargesStreamOptions {
  /** How long charges are kept: at least as long as execution records (LDBOX_EXECUTION_RETENTION). */
  maxAgeMs: number;
  replicas?: number;
}

/** Limits retention by age, file storage. Nothing else removes a charge: the dedup depends on it. */
export function chargesStreamConfig(opts: ChargesStreamOptions): StreamConfig {
  return {
    name: CHARGES_STREAM,
    subjects: [`${SUBJECT_PREFIX}>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    max_age: opts.maxAgeMs * MS,
    max_msgs_per_subject: 1,
    num_replicas: opts.replicas ?? 1,
  } as StreamConfig;
}

/** Creates the CHARGES stream or brings its retention in line (the gateway's call, like the other streams). */
export async function ensureChargesStream(jsm: JetStreamManager, opts: ChargesStreamOptions): Promise<void> {
  await ensureStream(jsm, chargesStreamConfig(opts));
}

/** One execution's cost, as stored on the stream. */
export interface Charge {
  workspace: string;
  executionId: string;
  units: number;
  /** ISO-8601: when the execution finished; the UTC month it counts in. */
  at: string;
}

/** A charge read back, with its stream sequence. */
interface StoredCharge {
  seq: number;
  workspace: string;
  units: number;
  at: string;
}

/** The first instant of `iso`'s UTC month, as ISO-8601 (the `periodStart` a charge counts in). */
export function periodOf(iso: string): string {
  const d = new Date(iso);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString();
}

/** Folds charges into one workspace's record: `charges` are every charge of it in (cursor, end], in order. */
export type FoldCharges = (workspace: string, charges: ReadonlyArray<{ seq: number; units: number; at: string }>, end: number) => Promise<void>;

export class ChargeLedger {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    /** The workspaces bucket, which holds the roll-up cursor. */
    private readonly workspaces: KV,
    /** Sends charges without nats.js's per-request machinery (src/nats/job-publisher.ts); absent: `js.publish`. */
    private readonly publisher?: Pick<JobPublisher, 'publish'>,
  ) {}

  /**
   * Records the cost of one execution, once: resolves `charged` when this call stored it, `already_charged`
   * when the execution's charge was stored before (by an earlier attempt or another executor). Throws
   * {@link StoreUnavailableError} when NATS did not answer (the job is retried; the retry is refused or stores it).
   */
  async charge(c: Charge): Promise<'charged' | 'already_charged'> {
    if (!Number.isSafeInteger(c.units) || c.units <= 0) throw new Error(`a charge is a positive whole number of units, got ${c.units}`);
    const subject = chargeSubject(c.workspace, c.executionId);
    const data = encodeJson({ units: c.units, at: c.at });
    if (this.publisher) {
      const r = await this.publisher.publish(subject, data, { msgID: c.executionId, headers: { 'Nats-Expected-Last-Subject-Sequence': '0' } });
      if (r.ok) return r.duplicate ? 'already_charged' : 'charged';
      if (r.errCode === JetStreamApiCodes.StreamWrongLastSequence) return 'already_charged';
      throw unavailable('recording the charge failed', new Error(r.message));
    }
    try {
      const ack = await this.js.publish(subject, data, {
        msgID: c.executionId,
        expect: { lastSubjectSequence: 0 },
      });
      return ack.duplicate ? 'already_charged' : 'charged';
    } catch (err) {
      if (isWrongRevision(err)) return 'already_charged';
      throw unavailable('recording the charge failed', err);
    }
  }

  /** The roll-up cursor: every charge up to `seq` is folded into its workspace's record. */
  async cursor(): Promise<{ seq: number; revision: number }> {
    let e;
    try {
      e = await this.workspaces.get(ROLLUP_CURSOR_KEY);
    } catch (err) {
      throw unavailable('reading the charge roll-up cursor failed', err);
    }
    if (e?.operation !== 'PUT') return { seq: 0, revision: e?.revision ?? 0 };
    const seq = decodeJson<{ seq?: unknown }>(e.value).seq;
    return { seq: typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : 0, revision: e.revision };
  }

  /**
   * The units of `workspace`'s charges stored after sequence `afterSeq` that count in `period` (a
   * `periodStart`): the part of its spend no roll-up has folded yet. Reads the stream as it is now.
   */
  async pendingUnits(workspace: string, afterSeq: number, period: string): Promise<number> {
    let total = 0;
    await this.#read(`${SUBJECT_PREFIX}${workspace}.*`, afterSeq, Number.POSITIVE_INFINITY, (c) => {
      if (periodOf(c.at) === period) total += c.units;
    });
    return total;
  }

  /**
   * Folds the charges stored after the cursor (at most `maxBatch`) into the workspaces' records with
   * `fold`, then moves the cursor past them. Returns how many charges were read (0: nothing to do).
   * Safe to run from several processes at once (see the module comment).
   */
  async rollUp(fold: FoldCharges, maxBatch = 10_000): Promise<number> {
    const cursor = await this.cursor();
    let state;
    try {
      state = (await this.jsm.streams.info(CHARGES_STREAM)).state;
    } catch (err) {
      throw unavailable('reading the charges stream failed', err);
    }
    if (state.last_seq <= cursor.seq) return 0;
    const end = Math.min(state.last_seq, cursor.seq + maxBatch);
    const byWorkspace = new Map<string, StoredCharge[]>();
    let read = 0;
    if (state.first_seq <= end) {
      await this.#read(`${SUBJECT_PREFIX}>`, cursor.seq, end, (c) => {
        read++;
        const list = byWorkspace.get(c.workspace);
        if (list) list.push(c);
        else byWorkspace.set(c.workspace, [c]);
      });
    }
    for (const [workspace, charges] of byWorkspace) await fold(workspace, charges, end);
    try {
      await this.workspaces.put(ROLLUP_CURSOR_KEY, encodeJson({ seq: end }), { previousSeq: cursor.revision });
    } catch (err) {
      // Another roll-up moved the cursor meanwhile: it folded the same charges (the records count each once).
      if (!isWrongRevision(err)) throw unavailable('moving the charge roll-up cursor failed', err);
    }
    return Math.max(read, 1);
  }

  /** Calls `each` for every charge on `filter` with a sequence in (afterSeq, upTo], in order. */
  async #read(filter: string, afterSeq: number, upTo: number, each: (c: StoredCharge) => void): Promise<void> {
    try {
      // One request tells whether there is anything at all: an empty fetch would wait out its expiry.
      // nats.js types `next_by_subj` for direct gets only; STREAM.MSG.GET takes it too (nats-server 2.9+).
      const next = { seq: afterSeq + 1, next_by_subj: filter } as unknown as MsgRequest;
      const first = await this.jsm.streams.getMessage(CHARGES_STREAM, next);
      if (!first || first.seq > upTo) return;
      const consumer = await this.js.consumers.get(CHARGES_STREAM, {
        filter_subjects: filter,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: first.seq,
      });
      for (;;) {
        const batch = await consumer.fetch({ max_messages: 1000, expires: 2000 });
        let got = 0;
        let done = false;
        for await (const m of batch) {
          got++;
          if (m.seq > upTo) {
            done = true;
            break;
          }
          const body = decodeJson<{ units?: unknown; at?: unknown }>(m.data);
          const units = typeof body.units === 'number' && Number.isSafeInteger(body.units) ? body.units : 0;
          const at = typeof body.at === 'string' ? body.at : new Date(0).toISOString();
          const workspace = m.subject.slice(SUBJECT_PREFIX.length, m.subject.lastIndexOf('.'));
          each({ seq: m.seq, workspace, units, at });
          if (m.seq >= upTo || m.info.pending === 0) {
            done = true;
            break;
          }
        }
        if (done || got === 0) return;
      }
    } catch (err) {
      throw unavailable('reading charges failed', err);
    }
  }
}
