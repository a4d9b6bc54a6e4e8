/**
 * Workspace budgets over the `ldbox-workspaces` KV bucket (created by {@link ensureWorkspacesBucket};
 * not one of src/nats's four buckets because only the control plane, the spending-cap checks and the
 * charge roll-up use it).
 *
 * Key: the workspace name. Value (JSON): {@link WorkspaceRecord}
 * `{"name","monthlyBudgetUnits","spentUnits","periodStart","rolledUpSeq"}`; `periodStart` is the first instant
 * of the UTC month that `spentUnits` counts. A workspace without a record reads as no cap and nothing spent.
 * The spend rolls over lazily: a record whose `periodStart` is an earlier month counts as 0 spent.
 *
 * Executions do not write here: their costs are messages on the CHARGES stream (charge-ledger.ts), folded
 * into `spentUnits` about once a second by {@link WorkspaceRepository.fold}. The key `_rollup` holds the
 * roll-up's cursor, not a workspace.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { type Workspace, WorkspaceSchema } from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { ensureKvBucket } from '../nats/streams.js';
import { type ChargeLedger, periodOf } from './charge-ledger.js';
import { decodeJson, encodeJson, isWrongRevision, StoreConflictError, unavailable } from './store-errors.js';

export const WORKSPACES_BUCKET = 'ldbox-workspaces';

export interface WorkspaceRecord {
  name: string;
  /** 0 = no cap. */
  monthlyBudgetUnits: number;
  spentUnits: number;
  /** ISO-8601, the start of the UTC month `spentUnits` belongs to. */
  periodStart: string;
  /** `spentUnits` counts every charge of this workspace up to this CHARGES stream sequence (absent: none). */
  rolledUpSeq?: number;
}

/** The first instant of `now`'s UTC month. */
export function monthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The first instant of the next UTC month. */
export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** The record as it stands at `now` (an earlier month's spend is 0); a fresh one for `name` when absent. */
export function currentPeriod(name: string, record: WorkspaceRecord | undefined, now: Date): WorkspaceRecord {
  const start = monthStart(now).toISOString();
  if (!record) return { name, monthlyBudgetUnits: 0, spentUnits: 0, periodStart: start };
  if (record.periodStart !== start) return { ...record, spentUnits: 0, periodStart: start };
  return record;
}

/** Seconds until the cap lifts when the workspace's budget is used up at `now`; undefined when it is not. */
export function spendingCapRetryAfter(record: WorkspaceRecord | undefined, now: Date): number | undefined {
  if (!record || record.monthlyBudgetUnits <= 0) return undefined;
  const cur = currentPeriod(record.name, record, now);
  if (cur.spentUnits < cur.monthlyBudgetUnits) return undefined;
  return Math.max(1, Math.ceil((nextMonthStart(now).getTime() - now.getTime()) / 1000));
}

export function toProtoWorkspace(r: WorkspaceRecord): Workspace {
  return create(WorkspaceSchema, {
    name: r.name,
    monthlyBudgetUnits: BigInt(r.monthlyBudgetUnits),
    spentUnits: BigInt(r.spentUnits),
    periodStart: timestampFromDate(new Date(r.periodStart)),
  });
}

/** Creates (or opens and updates) the workspaces bucket. */
export function ensureWorkspacesBucket(nc: NatsConnection, jsm: JetStreamManager, opts: { replicas?: number; timeoutMs?: number } = {}): Promise<KV> {
  return ensureKvBucket(nc, jsm, WORKSPACES_BUCKET, { replicas: opts.replicas ?? 1, timeoutMs: opts.timeoutMs ?? 3000 });
}

const CAS_ATTEMPTS = 5;

export class WorkspaceRepository {
  /** `ledger`: where executions' charges are (without it, `get` reports the rolled-up spend only). */
  constructor(
    private readonly kv: KV,
    private readonly ledger?: ChargeLedger,
  ) {}

  /**
   * The workspace at `now` (never undefined: an unknown workspace has no cap), its `spentUnits` exact: the
   * rolled-up spend plus the charges stored since (read from the CHARGES stream).
   */
  async get(name: string, now: Date): Promise<WorkspaceRecord> {
    const record = currentPeriod(name, (await this.#read(name))?.record, now);
    if (!this.ledger) return record;
    // From the record's own `rolledUpSeq`, not the roll-up cursor: the record and that sequence are one
    // value, so even a record read from a replica that lags (KV direct gets) is completed exactly by the
    // charges after it, which are read from the stream's leader.
    const pending = await this.ledger.pendingUnits(name, record.rolledUpSeq ?? 0, record.periodStart);
    return { ...record, spentUnits: record.spentUnits + pending };
  }

  /** Sets the monthly budget (0 removes the cap); the spend is kept. */
  setBudget(name: string, monthlyBudgetUnits: number, now: Date): Promise<WorkspaceRecord> {
    return this.#change(name, now, (r) => ({ ...r, monthlyBudgetUnits }));
  }

  /**
   * The roll-up's write ({@link ChargeLedger.rollUp}): adds the charges past the record's `rolledUpSeq` that
   * count in the current month, and marks the record as counting everything up to `end`. A charge at or
   * below `rolledUpSeq` is never added again, whoever folds it and however often.
   */
  fold(name: string, charges: ReadonlyArray<{ seq: number; units: number; at: string }>, end: number, now: Date): Promise<WorkspaceRecord> {
    return this.#change(name, now, (r) => {
      const from = r.rolledUpSeq ?? 0;
      if (from >= end) return r; // another roll-up folded these already: nothing to write
      let add = 0;
      for (const c of charges) if (c.seq > from && c.seq <= end && periodOf(c.at) === r.periodStart) add += c.units;
      return { ...r, spentUnits: r.spentUnits + add, rolledUpSeq: Math.max(from, end) };
    });
  }

  /** The record and its revision; a deleted record has a revision (for the next compare-and-set) but no record. */
  async #read(name: string): Promise<{ record: WorkspaceRecord | undefined; revision: number } | undefined> {
    let e;
    try {
      e = await this.kv.get(name);
    } catch (err) {
      throw unavailable('reading the workspace failed', err);
    }
    if (!e) return undefined;
    if (e.operation !== 'PUT') return { record: undefined, revision: e.revision };
    return { record: decodeJson<WorkspaceRecord>(e.value), revision: e.revision };
  }

  /** Compare-and-set of `f`'s record; `f` returning its argument unchanged (the same object) writes nothing. */
  async #change(name: string, now: Date, f: (r: WorkspaceRecord) => WorkspaceRecord): Promise<WorkspaceRecord> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.#read(name);
      const cur = currentPeriod(name, current?.record, now);
      const next = f(cur);
      if (next === cur && current?.record !== undefined) return next;
      try {
        await this.kv.put(name, encodeJson(next), { previousSeq: current?.revision ?? 0 });
        return next;
      } catch (err) {
        if (!isWrongRevision(err)) throw unavailable('updating the workspace failed', err);
      }
    }
    throw new StoreConflictError(`workspace ${name} changed concurrently ${CAS_ATTEMPTS} times; try again`);
  }
}
