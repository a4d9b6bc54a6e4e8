/**
 * A NATS cluster of `size` nats-server processes on loopback (routes between all of them, JetStream on
 * each, one store dir per node), started by the shared launcher (nats-server-process.ts). Behind
 * `ldbox dev --cluster 3` (src/dev/dev-command.ts) and the cluster fault test (test/cluster/).
 *
 * Each node keeps its client port, route port and store dir across {@link ClusterNode.restart}, which is
 * what "a node died, then came back" needs (`kill('SIGKILL')` then `restart()` is a crash). Route ports are
 * chosen free before the start (every node must name the others' in its config); client ports are picked by
 * the servers (`-p -1`) on the first start and kept after.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { anyFreePort } from '../net/local-ports.js';
import { type NatsServerConfig, type NatsServerProcess, startNatsServerProcess } from './nats-server-process.js';

export interface NatsClusterOptions {
  /** Holds one directory per node (`n1`, `n2`, …: config, ports file, `jetstream/`, log). */
  dir: string;
  /** Nodes, default 3 (an odd number: JetStream needs a majority). */
  size?: number;
  /** Cluster name (default `ldbox`). */
  name?: string;
  /** The only user clients and routes log in with; none when unset. */
  auth?: { user: string; password: string };
  /** `max_payload` in bytes. */
  maxPayload?: number;
  /** A first `#` line in each config file. */
  comment?: string;
  /** The nats-server binary (default: found on the PATH). */
  bin?: string;
  /** Each node's output also goes to `<dir>/<node>/nats-server.log`. */
  logFiles?: boolean;
  /** Each node serves its monitoring endpoints (`/jsz`, `/varz`) on a free loopback port ({@link ClusterNode.monitorUrl}). */
  monitoring?: boolean;
  /** Each node writes its pid to `<dir>/<node>/nats-server.pid` (a leftover of an earlier owner is stopped first). */
  pidFiles?: boolean;
  /** Own process groups (see NatsServerProcessOptions.detached). */
  detached?: boolean;
  /** Runs each node under this command (e.g. `['taskset', '-c', '0']`: a bench pins them; see NatsServerProcessOptions.wrap). */
  wrap?: string[];
  startTimeoutMs?: number;
}

export interface ClusterNode {
  /** `n1`, `n2`, … (the `server_name`, as JetStream's stream info names leaders). */
  readonly name: string;
  readonly port: number;
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  /** `http://127.0.0.1:<port>` of the monitoring endpoints, with {@link NatsClusterOptions.monitoring}. */
  readonly monitorUrl: string | undefined;
  readonly running: boolean;
  readonly pid: number;
  /** Resolves when the current process exits. */
  readonly exited: Promise<string>;
  logs(): string;
  /** Sends `signal` (default SIGTERM) and resolves once the process has exited; the data stays. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the node again (stopping it first if it runs) on the same ports with the same data. */
  restart(): Promise<void>;
}

export interface NatsCluster {
  readonly nodes: readonly ClusterNode[];
  /** The client URLs of all nodes, comma-separated (a NATS_URL seed list), without credentials. */
  readonly seedList: string;
  /** The node named `name` (`server_name`). */
  node(name: string): ClusterNode | undefined;
  /** Stops every node (SIGTERM, then SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<void>;
}

/** Starts the nodes together and resolves once each answers on its client port (the cluster may still be electing its leaders). */
/** Tries to start the cluster this many times, each with freshly picked ports. */
const START_ATTEMPTS = 3;

export async function startNatsCluster(opts: NatsClusterOptions): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  let nodes: Awaited<ReturnType<typeof startNode>>[] | undefined;
  for (let attempt = 1; !nodes; attempt++) {
    const routePorts: number[] = [];
    for (let i = 0; i < size; i++) routePorts.push(await anyFreePort());
    const started = await Promise.allSettled(routePorts.map((routePort, i) => startNode(opts, `n${i + 1}`, routePort, routePorts)));
    const failed = started.find((r) => r.status === 'rejected');
    if (!failed) {
      nodes = started.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof startNode>>>).value);
      break;
    }
    // No node may outlive a failed start (its files would keep the directory busy, its ports taken).
    await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.stopFor(2000) : undefined)));
    // A port picked free may be taken by someone else before the node binds it: try again with new ones.
    if (attempt >= START_ATTEMPTS) throw failed.reason;
    for (let i = 0; i < size; i++) rmSync(join(opts.dir, `n${i + 1}`), { recursive: true, force: true });
  }
  return {
    nodes,
    seedList: nodes.map((n) => n.url).join(','),
    node: (name) => nodes.find((n) => n.name === name),
    async stop(timeoutMs = 5000) {
      await Promise.all(nodes.map((n) => n.stopFor(timeoutMs)));
    },
  };
}

async function startNode(
  opts: NatsClusterOptions,
  name: string,
  routePort: number,
  routePorts: number[],
): Promise<ClusterNode & { stopFor(ms: number): Promise<void> }> {
  const dir = join(opts.dir, name);
  const monitorPort = opts.monitoring ? await anyFreePort() : undefined;
  mkdirSync(dir, { recursive: true });
  const config: NatsServerConfig = {
    comment: opts.comment,
    serverName: name,
    maxPayload: opts.maxPayload,
    auth: opts.auth,
    cluster: { name: opts.name ?? 'ldbox', port: routePort, routes: routePorts.filter((p) => p !== routePort), auth: opts.auth },
  };
  const start = (port: number | undefined) =>
    startNatsServerProcess({
      bin: opts.bin,
      dir,
      storeDir: join(dir, 'jetstream'),
      port,
      config,
      logFile: opts.logFiles ? join(dir, 'nats-server.log') : undefined,
      detached: opts.detached,
      wrap: opts.wrap,
      pidFile: opts.pidFiles ? join(dir, 'nats-server.pid') : undefined,
      args: monitorPort === undefined ? undefined : ['-m', String(monitorPort)],
      startTimeoutMs: opts.startTimeoutMs,
    });
  let proc: NatsServerProcess = await start(undefined);
  const port = proc.port;
  return {
    name,
    port,
    url: `nats://127.0.0.1:${port}`,
    monitorUrl: monitorPort === undefined ? undefined : `http://127.0.0.1:${monitorPort}`,
    get running() {
      return proc.running;
    },
    get pid() {
      return proc.pid;
    },
    get exited() {
      return proc.exited;
    },
    logs: () => proc.logs(),
    kill: (signal) => proc.kill(signal),
    async restart() {
      await proc.stop();
      proc = await start(port);
    },
    stopFor: (ms) => proc.stop(ms),
  };
}
