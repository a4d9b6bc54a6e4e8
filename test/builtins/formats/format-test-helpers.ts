/**
 * Shared by the format tests: a minimal BuiltinContext, calls of the built-ins with their result
 * shapes, and DuckDB (via @duckdb/node-api) as the independent Parquet reader and writer.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { Test } from 'tap';
import { DEFAULT_BUILTIN_CONFIG, type BuiltinContext } from '../../../runner/builtins/index.js';
import { FORMATS } from '../../../runner/builtins/formats/index.js';
import { GuestFacingError } from '../../../runner/builtins/guest-boundary.js';

/** A context as the sandbox gives a built-in, with a deadline `ms` from now. */
export function testContext(ms = 60_000, signal = new AbortController().signal): BuiltinContext {
  return {
    signal,
    deadline: performance.now() + ms,
    redact: (s: string) => s,
    config: DEFAULT_BUILTIN_CONFIG,
    counters: { requests: 0 },
    log: () => undefined,
    onEnd: () => () => undefined,
  } as unknown as BuiltinContext;
}

export interface Converted {
  base64: string;
  success: boolean;
  error?: string;
}

const sync = FORMATS.sync!;

export function csv2parquet(...args: unknown[]): Converted {
  return sync.csv2parquet!(args, testContext()) as Converted;
}

export function parquet2csv(...args: unknown[]): Converted {
  return sync.parquet2csv!(args, testContext()) as Converted;
}

export function arrow2parquet(...args: unknown[]): string {
  return sync.arrow2parquet!(args, testContext()) as string;
}

export function json2csv(...args: unknown[]): string {
  return sync.json2csv!(args, testContext()) as string;
}

/** The guest error a failing call throws: `[name, message]`, or 'no error'. */
export function thrown(f: () => unknown): [string, string] | 'no error' {
  try {
    f();
    return 'no error';
  } catch (err) {
    if (err instanceof GuestFacingError) return [err.guestName, err.message];
    throw err;
  }
}

/** The CSV text of a successful parquet2csv. */
export function csvOf(r: Converted): string {
  if (!r.success) throw new Error(`parquet2csv failed: ${r.error}`);
  return Buffer.from(r.base64, 'base64').toString('utf8');
}

/** Reading the files of a fixture folder (a URL ending in '/'): their text and their path. */
export function fixtureFolder(folder: URL): { text(name: string): string; path(name: string): string } {
  return {
    text: (name) => readFileSync(new URL(name, folder), 'utf8'),
    path: (name) => new URL(name, folder).pathname,
  };
}

/** An in-memory DuckDB with a temp directory for Parquet files. */
export class Duck {
  readonly dir = mkdtempSync(join(tmpdir(), 'ldbox-formats-'));
  private n = 0;

  private constructor(
    private readonly db: DuckDBInstance,
    readonly con: DuckDBConnection,
  ) {}

  static async open(): Promise<Duck> {
    const db = await DuckDBInstance.create(':memory:', { threads: '1' });
    return new Duck(db, await db.connect());
  }

  /** Writes bytes (or base64) to a new file in the temp dir; returns its path. */
  file(data: Uint8Array | string, ext = 'parquet'): string {
    const path = join(this.dir, `f${this.n++}.${ext}`);
    writeFileSync(path, typeof data === 'string' ? Buffer.from(data, 'base64') : data);
    return path;
  }

  /**
   * csv2parquet of `csv` written to a new file: its path, or `undefined` after a failed assertion
   * (`what: the error`) when the conversion failed.
   */
  parquetOf(t: Test, csv: string, options?: unknown, what = 'converted'): string | undefined {
    const r = csv2parquet(csv, options);
    t.equal(r.success, true, `${what}${r.error ? `: ${r.error}` : ''}`);
    return r.success ? this.file(r.base64) : undefined;
  }

  path(ext = 'parquet'): string {
    return join(this.dir, `f${this.n++}.${ext}`);
  }

  read(path: string): Buffer {
    return readFileSync(path);
  }

  /** Rows as JSON-able values (BIGINT as strings, lists as arrays). */
  async rows(sql: string): Promise<unknown[][]> {
    return (await this.con.runAndReadAll(sql)).getRowsJson() as unknown[][];
  }

  /** `[name, type]` of every column of a Parquet file, as DuckDB sees them. */
  async describe(path: string): Promise<[string, string][]> {
    const rows = await this.rows(`DESCRIBE SELECT * FROM read_parquet('${path}')`);
    return rows.map((r) => [r[0] as string, r[1] as string]);
  }

  async run(sql: string): Promise<void> {
    await this.con.run(sql);
  }

  close(): void {
    this.con.closeSync();
    this.db.closeSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
