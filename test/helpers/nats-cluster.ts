/**
 * A real 3-node NATS cluster for a test (src/nats/nats-cluster.ts in a temp dir, monitoring on), and the two
 * questions a fault test asks of it: which node leads a stream (`$JS.API.STREAM.INFO`, through a client of
 * the test's own) and which node is the JetStream meta leader (`/jsz` of a running node).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type NatsCluster, startNatsCluster } from '../../src/nats/nats-cluster.js';

export interface TestNatsCluster extends NatsCluster {
  /** A client of the test's own on every node (reconnects across kills). */
  readonly nc: NatsConnection;
  /** The stream's info, or undefined while it cannot be had (an election, no stream yet). */
  streamInfo(name: string): Promise<StreamInfo | undefined>;
  /** The JetStream meta leader's name as a running node sees it, or undefined during an election. */
  metaLeader(): Promise<string | undefined>;
  /** Stops every node and removes the data. */
  close(): Promise<void>;
}

export async function startTestNatsCluster(opts: { maxPayload?: number } = {}): Promise<TestNatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'ldbox-cluster-'));
  let cluster: NatsCluster;
  try {
    cluster = await startNatsCluster({ dir, monitoring: true, maxPayload: opts.maxPayload });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const nc = await connect({ servers: cluster.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 200, name: 'ldbox-test' });
  return {
    ...cluster,
    nodes: cluster.nodes,
    seedList: cluster.seedList,
    node: (name) => cluster.node(name),
    stop: (ms) => cluster.stop(ms),
    nc,
    async streamInfo(name) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 1000 });
        return await jsm.streams.info(name);
      } catch {
        return undefined;
      }
    },
    async metaLeader() {
      for (const n of cluster.nodes) {
        if (!n.running) continue;
        try {
          const res = await fetch(`${n.monitorUrl}/jsz`, { signal: AbortSignal.timeout(1000) });
          const leader = ((await res.json()) as { meta_cluster?: { leader?: string } }).meta_cluster?.leader;
          if (leader) return leader;
        } catch {
          /* try the next node */
        }
      }
      return undefined;
    },
    async close() {
      await nc.close().catch(() => undefined);
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
