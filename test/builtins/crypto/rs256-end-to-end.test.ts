/**
 * ld.signWithRS256 through a real runner: the RFC 7515 A.2 signature from a key in data.auth, hex and
 * base64, a JWT built in the sandbox, and bad keys: a catchable error whose message holds no line of
 * the key (the key comes in through data.input here, so the auth redactor cannot hide a leak), with the
 * sandbox serving afterwards.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { ErrorKind } from '../../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner } from '../../helpers/runner-harness.js';

const runner = await startTestRunner();
t.teardown(() => runner.close());

const FIXTURES = new URL('../../../../test/fixtures/rs256/', import.meta.url);
const fixture = (path: string) => readFileSync(new URL(path, FIXTURES), 'utf8');

interface Outcome {
  result: JsonValue | undefined;
  error: { kind: ErrorKind; name: string; message: string } | undefined;
  logs: string[];
}

async function run(code: string, input: Record<string, JsonValue> = {}, auth: Record<string, JsonValue> = {}): Promise<Outcome> {
  const res = await runner.grpc.execute({ code, input, auth });
  return {
    result: res.result === undefined ? undefined : toJson(ValueSchema, res.result),
    error: res.error && { kind: res.error.kind, name: res.error.name, message: res.error.message },
    logs: res.logs.map((l) => l.message),
  };
}

const input = fixture('rfc7515-a2/signing-input.txt');
const base64 = fixture('rfc7515-a2/signature.base64').trim();
const hex = fixture('rfc7515-a2/signature.hex').trim();

t.test('the RFC 7515 A.2 signature, key from data.auth', async (t) => {
  for (const form of ['pkcs1', 'pkcs8']) {
    const auth = { private_key: fixture(`rfc7515-a2/key.private.${form}.pem`) };
    t.same(
      await run('return ld.signWithRS256(data.input.s, data.auth.private_key)', { s: input }, auth),
      { result: { signature: base64 }, error: undefined, logs: [] },
      `${form}: base64 by default`,
    );
    t.same(
      await run("return ld.signWithRS256(data.input.s, data.auth.private_key, {encoding: 'hex'})", { s: input }, auth),
      { result: { signature: hex }, error: undefined, logs: [] },
      `${form}: hex`,
    );
  }
});

t.test('a JWT built in the sandbox verifies with the public key', async (t) => {
  const code = `
    const b64url = (s) => s.replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    const enc = (o) => b64url(btoa(JSON.stringify(o)));
    const signingInput = enc({alg: 'RS256', typ: 'JWT'}) + '.' + enc({sub: 'ldbox', iat: 1700000000});
    const { signature } = ld.signWithRS256(signingInput, data.auth.private_key);
    return signingInput + '.' + b64url(signature);`;
  const o = await run(code, {}, { private_key: fixture('rfc7520-4.1/key.private.pkcs8.pem') });
  t.equal(o.error, undefined);
  const [h, p, s] = String(o.result).split('.');
  t.ok(
    verify('sha256', Buffer.from(`${h}.${p}`), createPublicKey(fixture('rfc7520-4.1/key.public.spki.pem')), Buffer.from(s!, 'base64url')),
    'the JWT signature verifies',
  );
  t.same(JSON.parse(Buffer.from(p!, 'base64url').toString()), { sub: 'ldbox', iat: 1700000000 });
});

t.test('bad keys: a catchable error without the key, and the sandbox keeps serving', async (t) => {
  const pem = fixture('rfc7515-a2/key.private.pkcs8.pem');
  const lines = pem.split('\n');
  const keys = {
    truncated: lines.slice(0, 12).join('\n'),
    damaged: [...lines.slice(0, 12), '-----END PRIVATE KEY-----'].join('\n'),
    publicKey: fixture('rfc7515-a2/key.public.spki.pem'),
    garbage: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCh+BYK4uPJtGXO',
  };
  const code = `
    try { ld.signWithRS256('data', data.input.key); return 'signed'; }
    catch (e) { return [e instanceof Error, e.name, e.message, String(e.stack).includes(data.input.key.slice(40, 80))]; }`;
  const expected: Record<string, string> = {
    truncated: 'signWithRS256: the PEM is incomplete: its PRIVATE KEY block has no END line (truncated?)',
    damaged: 'signWithRS256: the PKCS#8 private key could not be read: its data is damaged or incomplete',
    publicKey: 'signWithRS256: not an RSA private key: the PEM holds a public key (signing needs the private key)',
    garbage: 'signWithRS256: privateKey is not a PEM private key (expected a PRIVATE KEY or RSA PRIVATE KEY block)',
  };
  for (const [name, key] of Object.entries(keys)) {
    const o = await run(code, { key });
    t.same(o.result, [true, 'Error', expected[name], false], `${name}: the error`);
    const leaked = key.split('\n').filter((l) => l.length >= 8 && JSON.stringify(o).includes(l));
    t.same(leaked, [], `${name}: no line of the key anywhere in the response`);
  }
  const uncaught = await run("return ld.signWithRS256('data', data.input.key)", { key: keys.damaged });
  t.same(
    uncaught.error,
    {
      kind: ErrorKind.THROWN,
      name: 'Error',
      message: 'signWithRS256: the PKCS#8 private key could not be read: its data is damaged or incomplete',
    },
    'uncaught: THROWN',
  );
  t.same(await run("return ld.signWithRS256('x', data.input.key, {encoding: 'base32'})", { key: pem }), {
    result: undefined,
    error: { kind: ErrorKind.THROWN, name: 'TypeError', message: "signWithRS256: options.encoding must be 'base64' or 'hex', got \"base32\"" },
    logs: [],
  });
  t.same(
    await run('return ld.signWithRS256(data.input.s, data.input.key)', { s: input, key: pem }),
    { result: { signature: base64 }, error: undefined, logs: [] },
    'still serving',
  );
  const status = await runner.grpc.getPoolStatus();
  t.equal(Number(status.workersReplaced), 0, 'no worker was replaced');
});
