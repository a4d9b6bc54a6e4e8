/**
 * Bench-only: PART 3 of bench/webhook.ts — what 3 replicas of the gateway's JOBS stream and KV buckets cost
 * webhook ingest, against 1 replica, on the same 3-node NATS cluster in the same run.
 *
 * Set-up: a 3-node nats-server cluster on loopback (src/nats/nats-cluster.ts, the launcher behind
 * `ldbox dev --cluster 3`; temp dir, `max_payload` as part 1, no auth), optionally run under a command
 * (`wrap`: part 1's pinning), then this process waits until JetStream answers on it (a meta leader is elected).
 *
 * Measurements: `rounds` rounds of R1 then R3. For each:
 *   - the gateway's streams are deleted (JOBS and every `KV_ldbox-*`: part 2's resetJetStream), so the
 *     gateway creates them anew with `LDBOX_JOBS_REPLICAS=R`, as on a first start;
 *   - the real gateway is started (`NATS_URL` the seed list of all three) — with `gatewayOnLeader`, restarted
 *     until its connection is on the JOBS leader's node — and given a workflow by the caller (part 1's child
 *     process, control plane and probe); every stream in the cluster is checked to have `num_replicas` R,
 *     and JOBS R peers in its `cluster` info (leader + replicas), before the load and again after it: a
 *     figure for the wrong replica count cannot be reported;
 *   - the caller's load window (part 1's runLoad: load generator, warm-up, measured window, the gateway's
 *     CPU over IPC) at `conns` connections, with nats-server CPU being the three nodes' together (/proc);
 *     nothing consumes the jobs, as in part 1;
 *   - after the window, JOBS must hold at least as many messages as there were 202s (part 1's "stored").
 * The ratios R3 / R1 are taken within a round (the machine is noisy and shared).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { type ClusterNode, type NatsCluster, startNatsCluster } from '../../src/nats/nats-cluster.js';
import { JOBS_STREAM } from '../../src/nats/streams.js';
import { resetJetStream } from './webhook-e2e.js';
import type { LoadResult } from './webhook-load.js';
import { procCpuMicros } from './webhook-nats.js';

export type ReplicaCount = 1 | 3;
/** The order within a round: R1 first, then R3. */
export const REPLICA_COUNTS: readonly ReplicaCount[] = [1, 3];

/** One measured window, as part 1's runLoad returns it. */
export interface WindowResult {
  load: LoadResult;
  serverUsPerReq: number;
  natsUsPerReq: number;
  foreignCores: number;
}

export interface ReplicaCostOptions<G extends { port: number; stop(): Promise<void> }, T> {
  rounds: number;
  conns: number;
  maxPayload: number;
  /** Runs each nats-server under this command (e.g. `['taskset', '-c', '0']`). */
  wrapNats?: string[];
  /** The gateway's env besides `NATS_URL` and `LDBOX_JOBS_REPLICAS`. */
  gatewayEnv: NodeJS.ProcessEnv;
  startGateway(env: NodeJS.ProcessEnv): Promise<G>;
  /** A workflow through the gateway's control plane and one 202 from it: what the load is sent to. */
  prepare(gateway: G): Promise<T>;
  /** Warm-up and a measured window at `conns` connections; nats-server CPU is read with `nats.cpuMicros()`. */
  measure(gateway: G, target: T, conns: number, nats: { cpuMicros(): number }): Promise<WindowResult>;
  /**
   * Restart the gateway (same env, seed list and all) until its NATS connection is on the JOBS leader's node, for
   * R1 and R3 alike: the client picks a node at random, and a publish through another node costs a second
   * nats-server and a route hop (R1: ~20 vs ~45 µs of nats-server CPU per webhook), noise as large as the
   * difference measured. Off: wherever it lands, as in a deployment (and printed).
   */
  gatewayOnLeader: boolean;
  /** Told each measurement as it is made. */
  onMeasurement?(m: ReplicaMeasurement): void;
}

export interface ReplicaMeasurement extends WindowResult {
  round: number;
  replicas: ReplicaCount;
  conns: number;
  /** JOBS messages after the window vs 202s over the whole load run (warm-up included). */
  stored: { messages: number; accepted: number };
  /** JOBS's stream info after the window: `config.num_replicas`, its leader, and its followers (current or not). */
  jobs: { numReplicas: number; leader: string; followers: Array<{ name: string; current: boolean }> };
  /**
   * The node(s) the gateway's NATS connection was on (monitoring `/connz`): the client picks one of the seed
   * list at random, and unless it is the JOBS leader every publish and its ack take one more hop, through a
   * route and a second nats-server — part of why R1 figures differ between rounds.
   */
  gatewayNodes: string[];
}

/** R3 / R1 within one round. */
export interface ReplicaRatios {
  round: number;
  rate: number;
  p50: number;
  p99: number;
  gatewayUs: number;
  natsUs: number;
}

export interface ReplicaCostResult {
  natsVersion: string;
  nodes: number;
  measurements: ReplicaMeasurement[];
  ratios: ReplicaRatios[];
}

/** The gateway's NATS connection name (gateway/gateway-server.ts). */
const GATEWAY_CONNECTION = 'ldbox-gateway';

/** Each start lands on the leader's node with a chance of 1 in 3: 30 misses in a row is (2/3)^30 ≈ 5e-6. */
const MAX_PLACEMENT_RESTARTS = 30;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `attempt()` until it resolves, pausing `pauseMs` after each failure; after `timeoutMs` the last failure is thrown. */
async function retryUntil<R>(attempt: () => Promise<R>, timeoutMs: number, pauseMs: number): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(pauseMs);
    }
  }
}

/** Until JetStream answers on the cluster: a fresh cluster has no meta leader for a second or two (503s until then). */
async function jetStreamReady(nc: NatsConnection, timeoutMs: number): Promise<JetStreamManager> {
  try {
    return await retryUntil(
      async () => {
        const jsm = await jetstreamManager(nc, { timeout: 5000 });
        await jsm.getAccountInfo();
        return jsm;
      },
      timeoutMs,
      200,
    );
  } catch (err) {
    throw new Error(`JetStream not ready on the cluster within ${timeoutMs / 1000} s: ${(err as Error).message}`);
  }
}

/**
 * Throws unless every stream in the cluster (all are the gateway's) has `replicas` replicas and JOBS has
 * that many peers; returns JOBS's stream info. Each stream is asked by name: the names come from the meta
 * leader's own state, whereas a stream list gathers every stream leader's answer and leaves out (after
 * seconds) one that is still electing its leader, as freshly created R3 streams do.
 */
async function checkReplicas(jsm: JetStreamManager, replicas: ReplicaCount): Promise<ReplicaMeasurement['jobs'] & { messages: number }> {
  const wrong: string[] = [];
  let jobs: StreamInfo | undefined;
  for await (const name of jsm.streams.names()) {
    const info = await jsm.streams.info(name);
    if (info.config.num_replicas !== replicas) wrong.push(`${name} has ${info.config.num_replicas}`);
    if (name === JOBS_STREAM) jobs = info;
  }
  if (!jobs) throw new Error(`part 3: no ${JOBS_STREAM} stream`);
  if (wrong.length > 0) throw new Error(`part 3: wanted ${replicas} replica(s) on every stream, but ${wrong.join(', ')}`);
  const leader = jobs.cluster?.leader ?? '';
  const followers = (jobs.cluster?.replicas ?? []).map((r) => ({ name: r.name, current: r.current }));
  if (leader === '' || 1 + followers.length !== replicas) {
    throw new Error(`part 3: ${JOBS_STREAM} should have ${replicas} peer(s), stream info says leader "${leader}" and followers ${JSON.stringify(followers)}`);
  }
  return { numReplicas: jobs.config.num_replicas, leader, followers, messages: jobs.state.messages };
}

/** {@link checkReplicas} until it passes or `timeoutMs` is over: new streams (and CHARGES, scaled in place by the gateway) settle first. */
function settledReplicas(jsm: JetStreamManager, replicas: ReplicaCount, timeoutMs: number): ReturnType<typeof checkReplicas> {
  return retryUntil(() => checkReplicas(jsm, replicas), timeoutMs, 250);
}

/** The nodes holding a client connection named `name`. */
async function nodesWithClient(nodes: readonly ClusterNode[], name: string): Promise<string[]> {
  const found: string[] = [];
  for (const n of nodes) {
    const res = await fetch(`${n.monitorUrl}/connz?limit=1024`, { signal: AbortSignal.timeout(5000) });
    const connz = (await res.json()) as { connections?: Array<{ name?: string }> };
    if (connz.connections?.some((c) => c.name === name)) found.push(n.name);
  }
  return found;
}

function ratiosOf(ms: ReplicaMeasurement[], rounds: number): ReplicaRatios[] {
  const out: ReplicaRatios[] = [];
  for (let round = 1; round <= rounds; round++) {
    const r1 = ms.find((m) => m.round === round && m.replicas === 1);
    const r3 = ms.find((m) => m.round === round && m.replicas === 3);
    if (!r1 || !r3) continue;
    out.push({
      round,
      rate: r3.load.acceptedPerSec / r1.load.acceptedPerSec,
      p50: r3.load.p50Ms / r1.load.p50Ms,
      p99: r3.load.p99Ms / r1.load.p99Ms,
      gatewayUs: r3.serverUsPerReq / r1.serverUsPerReq,
      natsUs: r3.natsUsPerReq / r1.natsUsPerReq,
    });
  }
  return out;
}

export async function measureReplicaCost<G extends { port: number; stop(): Promise<void> }, T>(opts: ReplicaCostOptions<G, T>): Promise<ReplicaCostResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-bench-replicas-'));
  let cluster: NatsCluster | undefined;
  let nc: NatsConnection | undefined;
  const measurements: ReplicaMeasurement[] = [];
  try {
    cluster = await startNatsCluster({ dir, size: 3, maxPayload: opts.maxPayload, wrap: opts.wrapNats, monitoring: true, comment: 'bench:webhook part 3' });
    const nodes = cluster.nodes;
    nc = await connect({ servers: cluster.seedList, name: 'bench-webhook-replicas' });
    const jsm = await jetStreamReady(nc, 30_000);
    // The three nodes together: with R1 the other two still carry the meta group (and, with the gateway
    // connected elsewhere than the JOBS leader, route its publishes).
    const nats = { cpuMicros: () => nodes.reduce((sum, n) => sum + procCpuMicros(n.pid), 0) };

    for (let round = 1; round <= opts.rounds; round++) {
      for (const replicas of REPLICA_COUNTS) {
        await resetJetStream(nc);
        const env = { ...opts.gatewayEnv, NATS_URL: cluster.seedList, LDBOX_JOBS_REPLICAS: String(replicas) };
        let gateway: G | undefined = await opts.startGateway(env);
        try {
          let restarts = 0;
          for (;;) {
            const { leader } = await settledReplicas(jsm, replicas, 30_000);
            if (!opts.gatewayOnLeader) break;
            const on = await nodesWithClient(nodes, GATEWAY_CONNECTION);
            if (on.length === 1 && on[0] === leader) break;
            if (++restarts > MAX_PLACEMENT_RESTARTS)
              throw new Error(
                `part 3: the gateway was not connected to the ${JOBS_STREAM} leader ${leader} after ${restarts - 1} restarts (on ${on.join(', ')})`,
              );
            await gateway.stop();
            gateway = undefined;
            gateway = await opts.startGateway(env);
          }
          const target = await opts.prepare(gateway);
          const window = await opts.measure(gateway, target, opts.conns, nats);
          await sleep(200); // acks in flight at the stop
          const { messages, ...jobs } = await settledReplicas(jsm, replicas, 30_000);
          const gatewayNodes = await nodesWithClient(nodes, GATEWAY_CONNECTION);
          const stored = { messages, accepted: window.load.acceptedTotal };
          const m: ReplicaMeasurement = { round, replicas, conns: opts.conns, ...window, stored, jobs, gatewayNodes };
          measurements.push(m);
          opts.onMeasurement?.(m);
        } finally {
          await gateway?.stop();
        }
      }
    }
    await resetJetStream(nc);
    return { natsVersion: nc.info?.version ?? '?', nodes: nodes.length, measurements, ratios: ratiosOf(measurements, opts.rounds) };
  } finally {
    await nc?.close().catch(() => undefined);
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
