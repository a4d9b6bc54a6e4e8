import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { create, type DescMessage, fromBinary, type MessageInitShape, type MessageShape, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { createHealthStatus, registerHealthService } from '../../runner/server/health-service.js';
import { registerReflectionService } from '../../runner/server/reflection-service.js';
import {
  type HealthCheckResponse,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from '../../src/gen/grpc/health/v1/health_pb.js';
import * as v1 from '../../src/gen/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../src/gen/grpc/reflection/v1alpha/reflection_pb.js';
import { file_ldbox_runner_v1_runner } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner } from '../helpers/runner-harness.js';

const RUNNER = 'ldbox.runner.v1.RunnerService';

/** grpc-js serialize/deserialize functions backed by a protobuf-es schema. */
function codec<Desc extends DescMessage>(schema: Desc) {
  return {
    serialize: (message: MessageShape<Desc>): Buffer => Buffer.from(toBinary(schema, message)),
    deserialize: (bytes: Buffer): MessageShape<Desc> => fromBinary(schema, bytes),
  };
}

const healthRequest = codec(HealthCheckRequestSchema);
const healthResponse = codec(HealthCheckResponseSchema);

/** Start the server under test on an ephemeral port; teardown closes it and its sessions. */
async function startServer() {
  const status = createHealthStatus();
  const server = http2.createServer(
    connectNodeAdapter({
      routes(router) {
        registerHealthService(router, status);
        registerReflectionService(router, [file_ldbox_runner_v1_runner]);
      },
    }),
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  t.teardown(async () => {
    client.close();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of sessions) session.destroy();
    await closed;
  });
  return { status, client };
}

const { status, client } = await startServer();

/** Health/Check through grpc-js; resolves with the response or rejects with the grpc-js ServiceError. */
function check(service: string): Promise<HealthCheckResponse> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      healthRequest.serialize,
      healthResponse.deserialize,
      create(HealthCheckRequestSchema, { service }),
      (error, response) => (error ? reject(error) : resolve(response!)),
    );
  });
}

/** Wait (up to ~2 s) until `predicate` holds; server-side cleanup after a cancel is asynchronous. */
async function eventually(predicate: () => boolean): Promise<boolean> {
  for (let i = 0; i < 200 && !predicate(); i++) await delay(10);
  return predicate();
}

t.test('Check', async (t) => {
  t.equal((await check('')).status, ServingStatus.SERVING, 'the whole server is SERVING');
  await t.rejects(check('nope'), { code: grpc.status.NOT_FOUND }, 'an unknown service is NOT_FOUND');
  status.set(RUNNER, 'NOT_SERVING');
  t.equal((await check(RUNNER)).status, ServingStatus.NOT_SERVING, 'a set status is reported');
  status.set(RUNNER, 'SERVING');
  t.equal((await check(RUNNER)).status, ServingStatus.SERVING, 'and so is a change');
});

t.test('Watch streams the current status, then changes, until cancelled', async (t) => {
  const service = 'ldbox.test.Watched';
  const call = client.makeServerStreamRequest(
    '/grpc.health.v1.Health/Watch',
    healthRequest.serialize,
    healthResponse.deserialize,
    create(HealthCheckRequestSchema, { service }),
  );
  const ended = new Promise<grpc.ServiceError>((resolve) => call.once('error', resolve));
  const responses: AsyncIterator<HealthCheckResponse> = call[Symbol.asyncIterator]();
  const next = async (): Promise<ServingStatus | undefined> => (await responses.next()).value?.status;

  t.equal(await next(), ServingStatus.SERVICE_UNKNOWN, 'an unknown service is reported at once');
  t.equal(status.listenerCount(), 1, 'the watch listens for changes');
  status.set(service, 'SERVING');
  t.equal(await next(), ServingStatus.SERVING, 'a change is streamed');
  status.set(service, 'SERVING');
  status.set(service, 'NOT_SERVING');
  t.equal(await next(), ServingStatus.NOT_SERVING, 'a repeated status is not streamed again');

  call.cancel();
  t.equal((await ended).code, grpc.status.CANCELLED, 'the client sees its own cancellation');
  t.ok(await eventually(() => status.listenerCount() === 0), 'the server released the listener');
  status.set(service, 'SERVING');
  t.equal(status.listenerCount(), 0, 'a change after cancel finds no listener');
});

/** One ServerReflectionInfo stream of either version, asked one question at a time (by `via`, with `metadata`). */
function reflectionStream<Req extends DescMessage, Res extends DescMessage>(
  version: string,
  requestSchema: Req,
  responseSchema: Res,
  via: grpc.Client = client,
  metadata: grpc.Metadata = new grpc.Metadata(),
) {
  const request = codec(requestSchema);
  const response = codec(responseSchema);
  const call = via.makeBidiStreamRequest(
    `/grpc.reflection.${version}.ServerReflection/ServerReflectionInfo`,
    request.serialize,
    response.deserialize,
    metadata,
  );
  const responses: AsyncIterator<MessageShape<Res>> = call[Symbol.asyncIterator]();
  return {
    async ask(init: MessageInitShape<Req>): Promise<MessageShape<Res>> {
      call.write(create(requestSchema, init));
      const { value, done } = await responses.next();
      if (done) throw new Error('reflection stream ended early');
      return value;
    },
    async close(): Promise<boolean> {
      call.end();
      return (await responses.next()).done === true;
    },
  };
}

/** The protocol-version-neutral view of a reflection answer the assertions need. */
type Reflected = v1.ServerReflectionResponse['messageResponse'] | v1alpha.ServerReflectionResponse['messageResponse'];

function serviceNames(answer: Reflected): string[] | undefined {
  return answer.case === 'listServicesResponse' ? answer.value.service.map((s) => s.name) : undefined;
}

function fileNames(answer: Reflected): string[] | undefined {
  return answer.case === 'fileDescriptorResponse'
    ? answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name)
    : undefined;
}

function errorCode(answer: Reflected): number | undefined {
  return answer.case === 'errorResponse' ? answer.value.errorCode : undefined;
}

const versions = [
  { version: 'v1', request: v1.ServerReflectionRequestSchema, response: v1.ServerReflectionResponseSchema },
  { version: 'v1alpha', request: v1alpha.ServerReflectionRequestSchema, response: v1alpha.ServerReflectionResponseSchema },
] as const;

for (const { version, request, response } of versions) {
  t.test(`reflection ${version}`, async (t) => {
    const stream = reflectionStream<DescMessage, DescMessage>(version, request, response);
    const ask = async (messageRequest: MessageInitShape<typeof v1.ServerReflectionRequestSchema>['messageRequest']) =>
      ((await stream.ask({ host: 'localhost', messageRequest })) as v1.ServerReflectionResponse).messageResponse;

    t.same(
      serviceNames(await ask({ case: 'listServices', value: '' })),
      [RUNNER, 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'],
      'list_services names every registered service',
    );
    t.same(
      fileNames(await ask({ case: 'fileContainingSymbol', value: RUNNER })),
      ['ldbox/runner/v1/runner.proto', 'google/protobuf/struct.proto'],
      'a service resolves to its file plus the imports',
    );
    t.same(
      fileNames(await ask({ case: 'fileContainingSymbol', value: `${RUNNER}.Execute` })),
      ['ldbox/runner/v1/runner.proto', 'google/protobuf/struct.proto'],
      'so does a method',
    );
    t.same(
      fileNames(await ask({ case: 'fileContainingSymbol', value: 'ldbox.runner.v1.ExecuteRequest.code' })),
      ['ldbox/runner/v1/runner.proto', 'google/protobuf/struct.proto'],
      'so does a field',
    );
    t.same(
      fileNames(await ask({ case: 'fileContainingSymbol', value: 'google.protobuf.Struct' })),
      ['google/protobuf/struct.proto'],
      'an imported message resolves to its own file',
    );
    t.same(fileNames(await ask({ case: 'fileByFilename', value: 'grpc/health/v1/health.proto' })), ['grpc/health/v1/health.proto'], 'file_by_filename');
    t.equal(errorCode(await ask({ case: 'fileContainingSymbol', value: 'ldbox.Nope' })), 5, 'unknown symbol: NOT_FOUND');
    t.equal(errorCode(await ask({ case: 'fileByFilename', value: 'nope.proto' })), 5, 'unknown file: NOT_FOUND');
    const numbers = await ask({ case: 'allExtensionNumbersOfType', value: 'ldbox.runner.v1.ExecuteRequest' });
    t.equal(numbers.case, 'allExtensionNumbersResponse', 'all_extension_numbers_of_type is supported');
    if (numbers.case === 'allExtensionNumbersResponse') {
      t.equal(numbers.value.baseTypeName, 'ldbox.runner.v1.ExecuteRequest', 'the base type is echoed');
      t.same(numbers.value.extensionNumber, [], 'a message without extensions has an empty list');
    }
    t.equal(
      errorCode(
        await ask({
          case: 'fileContainingExtension',
          value: { containingType: 'ldbox.runner.v1.ExecuteRequest', extensionNumber: 100 },
        }),
      ),
      5,
      'unknown extension: NOT_FOUND',
    );
    t.equal(await stream.close(), true, 'the server ends the stream when the client does');
  });
}

/**
 * The real runner with LDBOX_RUNNER_TOKEN, as the README shows it (`grpcurl -H` / `buf curl --reflect-header`):
 * reflection takes the same bearer token as Execute, health stays open.
 */
t.test('with a runner token: reflection refuses a call without the header and answers one with it', async (t) => {
  const token = 'reflection-token-0123456789abcdef';
  const runner = await startTestRunner({ LDBOX_RUNNER_TOKEN: token, LDBOX_POOL_SIZE: '1' });
  t.teardown(() => runner.close());
  const bearer = (value: string) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${value}`);
    return metadata;
  };
  const list = { host: 'localhost', messageRequest: { case: 'listServices', value: '' } } as const;

  for (const { version, request, response } of versions) {
    for (const [label, metadata] of [
      ['no header', new grpc.Metadata()],
      ['a wrong token', bearer(`${token}x`)],
    ] as const) {
      const refused = reflectionStream<DescMessage, DescMessage>(version, request, response, runner.grpc.raw, metadata);
      const err = (await refused.ask(list).then(
        () => undefined,
        (e: unknown) => e,
      )) as grpc.ServiceError | undefined;
      t.equal(err?.code, grpc.status.UNAUTHENTICATED, `${version} with ${label}: UNAUTHENTICATED`);
      t.match(err?.details, /missing or wrong runner token/, `${version} with ${label}: the message says why`);
    }

    const allowed = reflectionStream<DescMessage, DescMessage>(version, request, response, runner.grpc.raw, bearer(token));
    const answer = ((await allowed.ask(list)) as v1.ServerReflectionResponse).messageResponse;
    t.ok(serviceNames(answer)?.includes(RUNNER), `${version} with authorization: Bearer <token> lists ${RUNNER}`);
    t.equal(await allowed.close(), true, `${version}: the stream ends when the client ends it`);
  }

  const health = new grpc.Client(runner.url.replace('http://', ''), grpc.credentials.createInsecure());
  t.teardown(() => health.close());
  const serving = await new Promise<HealthCheckResponse>((resolve, reject) =>
    health.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      healthRequest.serialize,
      healthResponse.deserialize,
      create(HealthCheckRequestSchema, { service: '' }),
      (error, r) => (error ? reject(error) : resolve(r!)),
    ),
  );
  t.equal(serving.status, ServingStatus.SERVING, 'health stays open without the header');
});
