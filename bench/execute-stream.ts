/**
 * Execute calls on one `ExecuteStream` against the same calls as unary gRPC, in one run:
 *
 *   npm run bench:execute-stream     (= npm run build && node dist/bench/execute-stream.js)
 *
 * One runner (`ldbox runner`, 2 workers, a child process) and, in this process, the executor's own two
 * clients of it on one HTTP/2 connection: GrpcUnaryClient (an HTTP/2 stream per call, the reference) and
 * ExecuteStreamClient (src/executor/execute-stream-client.ts). `return 1`, 64 calls in flight, in rounds of
 * BENCH_SCALE × 15,000 calls that alternate the two (a shared machine's other work then weighs on both
 * alike), after a warm-up of both. Per round: calls/s, and CPU per call of the runner process (/proc) and of
 * this process (the client). Prints medians and the stream's ratios to unary, measured in the same run.
 * The client and the runner share this machine's cores, as an executor and a runner on one host do.
 */
import { spawn } from 'node:child_process';
import { create, toBinary } from '@bufbuild/protobuf';
import { ExecuteRequestSchema, RunnerService } from '../src/gen/ldbox/runner/v1/runner_pb.js';
import { ExecuteStreamClient } from '../src/executor/execute-stream-client.js';
import { GrpcUnaryClient } from '../src/executor/grpc-unary-client.js';
import { anyFreePort } from '../src/net/local-ports.js';
import { procCpuMicros } from './lib/webhook-nats.js';

const SCALE = Number(process.env.BENCH_SCALE ?? '1') > 0 ? Number(process.env.BENCH_SCALE ?? '1') : 1;
const ROUND_CALLS = Math.max(500, Math.round(15_000 * SCALE));
const ROUNDS = 6;
const IN_FLIGHT = 64;
const EXECUTE_PATH = `/${RunnerService.typeName}/${RunnerService.method.execute.name}`;

type Mode = 'unary' | 'stream';
interface Round {
  perSec: number;
  runnerUs: number;
  clientUs: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const port = await anyFreePort();
  const runner = spawn(process.execPath, [new URL('../../bin/ldbox.js', import.meta.url).pathname, 'runner'], {
    env: { ...process.env, LDBOX_RUNNER_PORT: String(port), LDBOX_POOL_SIZE: '2', LDBOX_LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  const connection = new GrpcUnaryClient(url, { readMaxBytes: 1 << 20, pingIntervalMs: 10_000, idleTimeoutMs: 60_000 });
  const stream = new ExecuteStreamClient(connection, { headers: {}, readMaxBytes: 1 << 20 });
  try {
    // Ready once /readyz says so (the runner warms itself up first).
    const deadline = Date.now() + 60_000;
    while (
      !(await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error('the runner was not ready within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const request = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { code: 'return 1' }));
    const call: Record<Mode, () => Promise<Uint8Array>> = {
      unary: () => connection.call(EXECUTE_PATH, request, { timeoutMs: 30_000 }),
      stream: () => stream.call(request, { timeoutMs: 30_000 }),
    };
    const load = async (mode: Mode, calls: number): Promise<void> => {
      let started = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (started++ < calls) await call[mode]();
        }),
      );
    };
    for (const mode of ['unary', 'stream'] as const) await load(mode, ROUND_CALLS);

    const rounds: Record<Mode, Round[]> = { unary: [], stream: [] };
    console.log(`bench:execute-stream — \`return 1\`, ${IN_FLIGHT} in flight, ${ROUNDS} rounds of ${ROUND_CALLS} calls per mode, alternating`);
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of r % 2 === 0 ? (['unary', 'stream'] as const) : (['stream', 'unary'] as const)) {
        const runner0 = procCpuMicros(runner.pid!);
        const client0 = process.cpuUsage();
        const t0 = performance.now();
        await load(mode, ROUND_CALLS);
        const ms = performance.now() - t0;
        const client = process.cpuUsage(client0);
        const round = {
          perSec: (ROUND_CALLS / ms) * 1000,
          runnerUs: (procCpuMicros(runner.pid!) - runner0) / ROUND_CALLS,
          clientUs: (client.user + client.system) / ROUND_CALLS,
        };
        rounds[mode].push(round);
        console.log(
          `  round ${r + 1} ${mode.padEnd(6)} ${round.perSec.toFixed(0).padStart(6)} calls/s   runner ${round.runnerUs.toFixed(0).padStart(4)} µs/call   client ${round.clientUs.toFixed(0).padStart(4)} µs/call`,
        );
      }
    }
    const m = (mode: Mode, key: keyof Round): number => median(rounds[mode].map((x) => x[key]));
    console.log('\nmedians            calls/s   runner µs/call   client µs/call');
    for (const mode of ['unary', 'stream'] as const) {
      console.log(
        `  ${mode.padEnd(16)} ${m(mode, 'perSec').toFixed(0).padStart(7)}   ${m(mode, 'runnerUs').toFixed(0).padStart(14)}   ${m(mode, 'clientUs').toFixed(0).padStart(14)}`,
      );
    }
    console.log(
      `\nstream / unary: ${(m('stream', 'perSec') / m('unary', 'perSec')).toFixed(2)}× the calls/s, ` +
        `${(m('stream', 'runnerUs') / m('unary', 'runnerUs')).toFixed(2)}× the runner's CPU per call, ` +
        `${(m('stream', 'clientUs') / m('unary', 'clientUs')).toFixed(2)}× the client's`,
    );
  } finally {
    stream.close();
    connection.close();
    runner.kill('SIGINT');
  }
}

await main();
