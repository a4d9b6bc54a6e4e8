/**
 * Starts a real runner (HTTP/2 on a random loopback port, real worker pool) and gives tests both
 * clients that matter: the canonical @grpc/grpc-js client and a Connect client.
 *
 * {@link startTestRunner} runs it as `ldbox runner`, its own process, as an operator does: in the test
 * process the runner and its workers would load every module through tap's module hooks (a hook thread
 * per worker on Node 20), which made a runner test file take ~25 % longer for nothing it checks.
 * {@link startInProcessRunner} keeps it in the test process, for the tests that look inside it (its
 * server object, the threads of this process).
 */
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { loadRunnerConfig } from '../../runner/config/runner-config.js';
import {
  type ExecuteRequest,
  ExecuteRequestSchema,
  type ExecuteResponse,
  ExecuteResponseSchema,
  type GetPoolStatusResponse,
  GetPoolStatusRequestSchema,
  GetPoolStatusResponseSchema,
  RunnerService,
} from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startRunnerServer, type RunnerServer } from '../../runner/server/runner-server.js';
import { type RoleProcess, startRole } from './role-process.js';

export type ExecuteInit = MessageInitShape<typeof ExecuteRequestSchema>;

/** A grpc-js client for RunnerService, promisified; errors reject with the grpc-js ServiceError. */
export interface GrpcRunnerClient {
  execute(req: ExecuteInit, options?: { deadlineMs?: number; metadata?: grpc.Metadata; signal?: AbortSignal }): Promise<ExecuteResponse>;
  getPoolStatus(metadata?: grpc.Metadata): Promise<GetPoolStatusResponse>;
  raw: grpc.Client;
}

export interface TestRunner {
  url: string;
  grpc: GrpcRunnerClient;
  /** Connect protocol over HTTP/2. */
  connect: Client<typeof RunnerService>;
  /** gRPC protocol through connect-node's own client. */
  connectGrpc: Client<typeof RunnerService>;
  close(): Promise<void>;
}

/** Runner settings of a test runner: two workers and no warm-up unless the test says otherwise. */
const testRunnerEnv = (env: Record<string, string>): Record<string, string> => ({
  LDBOX_POOL_SIZE: '2',
  // No warm-up unless a test asks for one (test/runner/warm-up.test.ts): it would only slow the suite.
  LDBOX_RUNNER_WARMUP_CALLS: '0',
  ...env,
});

/** A runner in its own process (`ldbox runner`); `process` restarts or kills it. */
export async function startTestRunner(env: Record<string, string> = {}): Promise<TestRunner & { process: RoleProcess }> {
  const proc = await startRole('runner', testRunnerEnv(env));
  const clients = runnerClients(proc.url);
  return {
    ...clients,
    process: proc,
    async close() {
      clients.close();
      await proc.kill();
    },
  };
}

export type InProcessRunner = TestRunner & { server: RunnerServer };

/** A runner in the test process, for tests that read its server object or this process's threads. */
export async function startInProcessRunner(env: Record<string, string> = {}): Promise<InProcessRunner> {
  const config = loadRunnerConfig({ LDBOX_RUNNER_PORT: '0', ...testRunnerEnv(env) });
  const server = await startRunnerServer(config, silentLogger());
  const clients = runnerClients(`http://127.0.0.1:${server.port}`);
  return {
    ...clients,
    server,
    async close() {
      clients.close();
      await server.close(2000);
    },
  };
}

/** The three clients of the runner at `url` (`http://127.0.0.1:<port>`). */
function runnerClients(url: string): Omit<TestRunner, 'close'> & { close(): void } {
  const raw = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  const path = `/${RunnerService.typeName}`;
  const grpcClient: GrpcRunnerClient = {
    raw,
    execute: (req, options = {}) =>
      new Promise((resolve, reject) => {
        const callOptions: grpc.CallOptions = {};
        if (options.deadlineMs !== undefined) callOptions.deadline = Date.now() + options.deadlineMs;
        const call = raw.makeUnaryRequest(
          `${path}/Execute`,
          (m: ExecuteRequest) => Buffer.from(toBinary(ExecuteRequestSchema, m)),
          (b: Buffer) => fromBinary(ExecuteResponseSchema, b),
          create(ExecuteRequestSchema, req),
          options.metadata ?? new grpc.Metadata(),
          callOptions,
          (err, res) => (err ? reject(err) : resolve(res!)),
        );
        options.signal?.addEventListener('abort', () => call.cancel(), { once: true });
      }),
    getPoolStatus: (metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        raw.makeUnaryRequest(
          `${path}/GetPoolStatus`,
          (m: ReturnType<typeof create<typeof GetPoolStatusRequestSchema>>) => Buffer.from(toBinary(GetPoolStatusRequestSchema, m)),
          (b: Buffer) => fromBinary(GetPoolStatusResponseSchema, b),
          create(GetPoolStatusRequestSchema),
          metadata,
          {},
          (err, res) => (err ? reject(err) : resolve(res!)),
        );
      }),
  };
  const connect = createClient(RunnerService, createConnectTransport({ baseUrl: url, httpVersion: '2' }));
  const connectGrpc = createClient(RunnerService, createGrpcTransport({ baseUrl: url }));
  return { url, grpc: grpcClient, connect, connectGrpc, close: () => raw.close() };
}

/** The grpc-js ServiceError a call ends with; undefined when it succeeded. */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError | undefined> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  return undefined;
}

/** The ConnectError a call ends with; undefined when it succeeded. */
export async function connectError(p: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  return undefined;
}
