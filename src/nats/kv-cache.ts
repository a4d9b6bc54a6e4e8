/**
 * An in-memory copy of a KV bucket, kept current by a KV watch, so that the gateway answers workflow and
 * webhook lookups from memory instead of making a NATS round trip per request.
 *
 * Survives reconnects and server restarts: after every reconnect the watch is started again and the copy
 * rebuilt from scratch (a snapshot of the current values, then updates), so deletes that happened while
 * this process was cut off are not missed. Until the rebuilt copy is complete, lookups keep using the
 * previous one. {@link KvCache.ready} turns true once the first complete copy is in memory.
 */
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { NatsClient } from './connect.js';
import { isStreamNotFound } from './streams.js';

export interface KvCacheOptions<T> {
  client: NatsClient;
  bucket: string;
  /** Turns a stored value into T; throw to treat the entry as absent (logged). Default: JSON.parse. */
  decode?: (value: Uint8Array, key: string) => T;
  logger?: Logger;
  /** Pause before retrying a failed watch. Default 500 ms. */
  retryDelayMs?: number;
}

export type KvCacheListener<T> = (key: string, value: T | undefined) => void;

const dec = new TextDecoder();

export class KvCache<T> {
  #map = new Map<string, T>();
  #ready = false;
  #readyWaiters: Array<() => void> = [];
  #listeners = new Set<KvCacheListener<T>>();
  #stop = new AbortController();
  #restart: (() => void) | undefined;
  #offState: () => void;
  #loop: Promise<void>;
  readonly #decode: (value: Uint8Array, key: string) => T;
  readonly #log: Logger;

  constructor(private readonly opts: KvCacheOptions<T>) {
    this.#decode = opts.decode ?? ((v) => JSON.parse(dec.decode(v)) as T);
    this.#log = opts.logger ?? silentLogger();
    this.#offState = opts.client.onState((s, prev) => {
      if (s === 'connected' && prev !== 'connecting') this.#restart?.(); // back after an outage: rebuild
    });
    this.#loop = this.#run();
  }

  /** True once a complete copy of the bucket has been loaded (it then stays true). */
  get ready(): boolean {
    return this.#ready;
  }
  get size(): number {
    return this.#map.size;
  }
  get(key: string): T | undefined {
    return this.#map.get(key);
  }
  has(key: string): boolean {
    return this.#map.has(key);
  }
  keys(): IterableIterator<string> {
    return this.#map.keys();
  }
  entries(): IterableIterator<[string, T]> {
    return this.#map.entries();
  }

  /** Called for each change applied after the cache became ready (value undefined = deleted). */
  onChange(listener: KvCacheListener<T>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves when {@link ready}. */
  whenReady(): Promise<void> {
    if (this.#ready) return Promise.resolve();
    return new Promise((r) => this.#readyWaiters.push(r));
  }

  /** Stops watching; resolves once the watch loop has ended. (`close`, the one verb for stopping things.) */
  async close(): Promise<void> {
    this.#offState();
    this.#stop.abort();
    this.#restart?.();
    await this.#loop;
  }

  #decodeEntry(e: KvWatchEntry): T | undefined {
    if (e.operation !== 'PUT') return undefined;
    try {
      return this.#decode(e.value, e.key);
    } catch (err) {
      this.#log.warn({ bucket: this.opts.bucket, key: e.key, err: (err as Error).message }, 'undecodable KV value ignored');
      return undefined;
    }
  }

  #apply(map: Map<string, T>, e: KvWatchEntry, notify: boolean): void {
    const v = this.#decodeEntry(e);
    if (v === undefined) map.delete(e.key);
    else map.set(e.key, v);
    if (notify) for (const l of this.#listeners) l(e.key, v);
  }

  #markReady(snapshot: Map<string, T>): void {
    this.#map = snapshot;
    if (this.#ready) return;
    this.#ready = true;
    const ws = this.#readyWaiters;
    this.#readyWaiters = [];
    for (const w of ws) w();
  }

  async #watchOnce(nc: NatsConnection): Promise<void> {
    const kv: KV = await new Kvm(jetstream(nc)).open(this.opts.bucket);
    const empty = (await kv.status()).values === 0;
    const iter = await kv.watch();
    const stopIter = () => iter.stop();
    this.#restart = stopIter;
    if (this.#stop.signal.aborted) iter.stop();
    const snapshot = new Map<string, T>();
    let live = false;
    if (empty) {
      live = true;
      this.#markReady(snapshot);
    }
    // Entries up to and including the first one flagged isUpdate are the initial values (nats.js flags
    // the last initial entry as an update); everything after is live.
    for await (const e of iter) {
      if (live) {
        this.#apply(this.#map, e, true);
      } else {
        this.#apply(snapshot, e, false);
        if (e.isUpdate) {
          live = true;
          this.#markReady(snapshot);
        }
      }
    }
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      let nc: NatsConnection;
      try {
        nc = await this.opts.client.whenConnected(this.#stop.signal);
      } catch {
        return;
      }
      try {
        await this.#watchOnce(nc);
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        // A bucket not created yet (a fresh start: the gateway creates it during set-up) is waited for.
        if (isStreamNotFound(err)) this.#log.debug({ bucket: this.opts.bucket }, 'waiting for the KV bucket to be created');
        else this.#log.warn({ bucket: this.opts.bucket, err: (err as Error).message }, 'KV watch failed, retrying');
      }
      if (this.#stop.signal.aborted) return;
      await new Promise<void>((r) => {
        const t = setTimeout(r, this.opts.retryDelayMs ?? 500);
        this.#restart = () => (clearTimeout(t), r());
      });
    }
  }
}

/** Start caching `bucket`; see {@link KvCache}. */
export function watchKvBucket<T>(opts: KvCacheOptions<T>): KvCache<T> {
  return new KvCache<T>(opts);
}
