/**
 * ld.cloudRequest / ld.awsRequest (spec "ld.cloudRequest(options)") end to end on the host side:
 * `createCloudRequest(send)` with a `send` that really performs the request (node:http) to a local
 * server, and the server verifies every request it receives twice, independently of the client:
 * with the signer run on the received request, and with the reference computation of
 * sigv4-reference.ts. Plus the option checks, with their exact messages, never showing a secret.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { type BuiltinContext, DEFAULT_BUILTIN_CONFIG } from '../../../runner/builtins/guest-boundary.js';
import { CLOUD, createCloudRequest, type PreparedRequest, type SendOptions, type SendRequest } from '../../../runner/builtins/cloud/cloud-request.js';
import { signSigV4 } from '../../../runner/builtins/cloud/sigv4-signer.js';
import { GuestFacingError } from '../../../runner/builtins/guest-boundary.js';
import { canonicalRequest, sha256Hex, signature } from './sigv4-reference.js';

const ACCESS_KEY_ID = 'AKIDEXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const TOKEN = 'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuw==';
const S3_SERVICES = new Set(['s3', 's3-object-lambda', 's3-outposts', 's3express']);

/** What the server saw and concluded about one request. */
interface Received {
  verdict: 'ok' | string;
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  signedHeaders: string[];
  body: Buffer;
  /** Authorization recomputed with the signer from the received request. */
  bySigner: string;
  /** Signature recomputed by the reference computation. */
  byReference: string;
}

const AUTHZ = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

/** Checks the request's SigV4 signature as a service would; the verdict is 'ok' or the reason it fails. */
async function verify(req: http.IncomingMessage, body: Buffer): Promise<Received> {
  const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
  const pairs: [string, string][] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) pairs.push([req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string]);
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)]));
  const base = { method: req.method ?? '', path: url.pathname, query: url.search.slice(1), headers, body, signedHeaders: [], bySigner: '', byReference: '' };

  const m = AUTHZ.exec(headers['authorization'] ?? '');
  if (!m) return { ...base, verdict: 'no SigV4 Authorization header' };
  const [, keyId, day, region, service, signedList, sig] = m as unknown as string[];
  if (keyId !== ACCESS_KEY_ID) return { ...base, verdict: 'unknown access key' };
  const amzDate = headers['x-amz-date'] ?? '';
  if (amzDate.slice(0, 8) !== day) return { ...base, verdict: 'x-amz-date does not match the scope' };
  const signedHeaders = (signedList as string).split(';');
  for (const required of ['host', 'x-amz-date']) if (!signedHeaders.includes(required)) return { ...base, verdict: `${required} is not signed` };
  const token = headers['x-amz-security-token'];
  if (token !== undefined && !signedHeaders.includes('x-amz-security-token')) return { ...base, verdict: 'the token is not signed' };
  const declared = headers['x-amz-content-sha256'];
  if (declared !== undefined && declared !== 'UNSIGNED-PAYLOAD' && declared !== sha256Hex(body)) {
    return { ...base, signedHeaders, verdict: 'x-amz-content-sha256 is not the hash of the body' };
  }

  const s3 = S3_SERVICES.has(service as string);
  const creq = canonicalRequest({
    method: base.method,
    path: base.path,
    query: base.query,
    headers: pairs,
    signedHeaders,
    payloadHash: declared ?? sha256Hex(body),
    s3,
  });
  const byReference = signature(creq, { secretAccessKey: SECRET, amzDate, region: region as string, service: service as string });

  const signingDate = new Date(amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const again = await signSigV4(
    {
      method: base.method,
      url: url.href,
      headers: pairs.filter(([n]) => signedHeaders.includes(n.toLowerCase())),
      body: body.byteLength === 0 ? undefined : new Uint8Array(body),
    },
    {
      region: region as string,
      service: service as string,
      credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET, sessionToken: token },
      signingDate,
      contentSha256: false,
    },
  );
  const bySigner = again.headers['authorization'] ?? '';
  let verdict = 'ok';
  if (byReference !== sig) verdict = 'signature mismatch (reference)';
  else if (bySigner !== headers['authorization']) verdict = 'signature mismatch (signer)';
  return { ...base, signedHeaders, verdict, bySigner, byReference };
}

const received: Received[] = [];
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void verify(req, Buffer.concat(chunks)).then((r) => {
      received.push(r);
      const ok = r.verdict === 'ok';
      res.writeHead(ok ? 200 : 403, { 'content-type': 'application/json', 'x-test': 'yes' });
      res.end(JSON.stringify(ok ? { ok, bytes: r.body.byteLength } : { ok, reason: r.verdict }));
    });
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The test's own HTTP client: sends the prepared request exactly as given, one connection per request. */
const calls: { prepared: PreparedRequest; options: SendOptions }[] = [];
const send: SendRequest = (prepared, options, ctx) => {
  calls.push({ prepared, options });
  return new Promise((resolve, reject) => {
    const u = new URL(prepared.url);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: prepared.method,
        headers: prepared.headers,
        agent: false,
        signal: ctx.signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)]));
          resolve(
            options.responseType === 'binary' || options.responseType === 'stream'
              ? { status: res.statusCode, headers, buffer: new Uint8Array(bytes), success: (res.statusCode ?? 0) < 300 }
              : { status: res.statusCode, headers, text: bytes.toString('utf8') },
          );
        });
      },
    );
    req.on('error', reject);
    req.end(prepared.body);
  });
};

function context(): BuiltinContext {
  return {
    signal: new AbortController().signal,
    deadline: performance.now() + 60_000,
    redact: (s) => s,
    config: DEFAULT_BUILTIN_CONFIG,
    counters: { requests: 0 },
    log: () => undefined,
    onEnd: () => () => undefined,
  };
}

const cloudRequest = createCloudRequest(send);
const credentials = { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET };

/** Runs one call; returns its result and what the server received. */
async function call(options: Record<string, unknown>): Promise<{ result: unknown; got: Received; sent: PreparedRequest; sendOptions: SendOptions }> {
  const before = received.length;
  const result = await cloudRequest([options], context());
  const got = received[before];
  const last = calls[calls.length - 1];
  if (got === undefined || last === undefined || received.length !== before + 1) throw new Error('the server did not receive exactly one request');
  return { result, got, sent: last.prepared, sendOptions: last.options };
}

t.test('a JSON POST with an awkward path and query is signed so that the server verifies it', async (t) => {
  const { result, got, sent, sendOptions } = await call({
    method: 'post',
    url: `${base}/prod/items/a b:c(1)/./x?q=hello world&list=2&list=1&flag&plus=a+b&lit=%2B&uni=ü&ap='*'#fragment`,
    headers: { 'X-Custom': '  spaced   value ', Accept: 'application/json' },
    body: { name: 'widget', count: 3 },
    region: 'eu-west-1',
    service: 'execute-api',
    credentials,
  });
  t.equal(got.verdict, 'ok', 'the signature verifies (signer and reference agree)');
  const r = result as { status: number; headers: Record<string, string>; text: string };
  t.same(Object.keys(r).sort(), ['headers', 'status', 'text'], "ld.request's result shape");
  t.equal(r.status, 200);
  t.equal(r.headers['x-test'], 'yes');
  t.equal(r.text, JSON.stringify({ ok: true, bytes: got.body.byteLength }));
  t.same(sendOptions, { responseType: 'json', maxRedirects: 0, name: 'ld.cloudRequest' }, 'redirects are not followed');
  t.equal(sent.method, 'POST');
  t.equal(got.method, 'POST');
  t.equal(got.path, '/prod/items/a%20b%3Ac%281%29/x', 'the path is sent in the signed (strict) encoding');
  t.equal(got.query, 'q=hello%20world&list=2&list=1&flag&plus=a%20b&lit=%2B&uni=%C3%BC&ap=%27%2A%27', 'the query keeps its order; + is a space');
  t.equal(got.body.toString('utf8'), '{"name":"widget","count":3}');
  t.equal(got.headers['content-type'], 'application/json', 'an object body is JSON');
  t.equal(got.headers['x-custom'], 'spaced   value', 'header sent as given (the server trims the edges)');
  t.same(got.signedHeaders, ['accept', 'content-type', 'host', 'x-amz-date', 'x-custom'], 'x-amz-content-sha256 only for services that need it');
  t.notOk('x-amz-security-token' in got.headers);
});

t.test('a session token is sent and signed as X-Amz-Security-Token', async (t) => {
  const { got } = await call({
    method: 'GET',
    url: `${base}/?Action=GetCallerIdentity&Version=2011-06-15`,
    // A caller's own token header is replaced by the credential's.
    headers: { 'X-Amz-Security-Token': 'stale' },
    region: 'us-east-1',
    service: 'sts',
    credentials: { ...credentials, sessionToken: TOKEN },
  });
  t.equal(got.verdict, 'ok');
  t.equal(got.headers['x-amz-security-token'], TOKEN);
  t.ok(got.signedHeaders.includes('x-amz-security-token'));
});

t.test('a byte array body is sent as those bytes and signed; S3 gets x-amz-content-sha256', async (t) => {
  const bytes = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
  const { got, sent } = await call({
    method: 'PUT',
    url: `${base}/bucket/dir//a+b (1)~.bin`,
    headers: { 'x-amz-meta-origin': 'test' },
    body: bytes,
    region: 'us-east-1',
    service: 's3',
    credentials,
  });
  t.equal(got.verdict, 'ok');
  t.same([...got.body], [...bytes], 'the exact bytes arrive');
  t.equal(sent.body, bytes, 'handed to send as they were signed');
  t.equal(got.headers['x-amz-content-sha256'], createHash('sha256').update(bytes).digest('hex'));
  t.equal(got.path, '/bucket/dir//a%2Bb%20%281%29~.bin', 'S3: the path keeps its // and is signed as sent');
  t.notOk('content-type' in got.headers, 'no content-type is made up for bytes');

  const plain = await call({ method: 'POST', url: `${base}/upload`, body: [0, 1, 127, 128, 255], region: 'us-east-1', service: 's3', credentials });
  t.equal(plain.got.verdict, 'ok');
  t.same([...plain.got.body], [0, 1, 127, 128, 255], 'a plain Array of bytes is bytes');
  t.equal(plain.got.headers['x-amz-content-sha256'], sha256Hex(Uint8Array.from([0, 1, 127, 128, 255])));

  const json = await call({ method: 'POST', url: `${base}/upload`, body: [1, 'two', 300], region: 'us-east-1', service: 'lambda', credentials });
  t.equal(json.got.verdict, 'ok');
  t.equal(json.got.body.toString('utf8'), '[1,"two",300]', 'any other array is JSON');
});

t.test('string and form bodies', async (t) => {
  const text = await call({
    method: 'POST',
    url: `${base}/`,
    headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'DynamoDB_20120810.ListTables' },
    body: '{"Limit":1,"note":"héllo ✓"}',
    region: 'us-east-1',
    service: 'dynamodb',
    credentials,
  });
  t.equal(text.got.verdict, 'ok');
  t.equal(text.got.body.toString('utf8'), '{"Limit":1,"note":"héllo ✓"}', 'a string is sent as UTF-8, as signed');
  t.equal(text.got.headers['content-type'], 'application/x-amz-json-1.0', 'a given content-type stands');

  const form = await call({
    method: 'POST',
    url: `${base}/`,
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: { Action: 'SendMessage', MessageBody: 'a b&c', Attr: ['x', 'y'], Skip: null },
    region: 'us-east-1',
    service: 'sqs',
    credentials,
  });
  t.equal(form.got.verdict, 'ok');
  t.equal(form.got.body.toString('utf8'), 'Action=SendMessage&MessageBody=a+b%26c&Attr=x&Attr=y', 'an object is a form when the content-type says so');
});

t.test('responseType and timeout go to send; the result is what send returns', async (t) => {
  const { result, sendOptions } = await call({
    method: 'GET',
    url: `${base}/object`,
    region: 'us-east-1',
    service: 's3',
    credentials,
    responseType: 'binary',
    timeout: 1500,
  });
  t.same(sendOptions, { responseType: 'binary', maxRedirects: 0, name: 'ld.cloudRequest', timeoutMs: 1500 });
  const r = result as { status: number; buffer: Uint8Array; success: boolean };
  t.equal(r.status, 200);
  t.equal(r.success, true);
  t.equal(Buffer.from(r.buffer).toString('utf8'), '{"ok":true,"bytes":0}');

  const zero = await call({ method: 'GET', url: `${base}/`, region: 'us-east-1', service: 's3', credentials, timeout: 0, responseType: null });
  t.same(zero.sendOptions, { responseType: 'json', maxRedirects: 0, name: 'ld.cloudRequest' }, 'timeout 0 means none, as in ld.request');
});

t.test('the server refuses a request changed after signing (the check is not vacuous)', async (t) => {
  const tamper =
    (change: (p: PreparedRequest) => PreparedRequest): SendRequest =>
    (p, o, c) =>
      send(change(p), o, c);
  const options = {
    method: 'POST',
    url: `${base}/x?a=1`,
    headers: { 'x-custom': 'v' },
    body: 'payload',
    region: 'us-east-1',
    service: 'execute-api',
    credentials,
  };
  const cases: [string, (p: PreparedRequest) => PreparedRequest][] = [
    ['body', (p) => ({ ...p, body: 'payload!' })],
    ['signed header', (p) => ({ ...p, headers: { ...p.headers, 'x-custom': 'w' } })],
    ['query', (p) => ({ ...p, url: p.url.replace('a=1', 'a=2') })],
    ['path', (p) => ({ ...p, url: p.url.replace('/x', '/y') })],
  ];
  for (const [what, change] of cases) {
    const before = received.length;
    const result = (await createCloudRequest(tamper(change))([options], context())) as { status: number };
    t.equal(result.status, 403, `a changed ${what} is refused`);
    t.match(received[before]?.verdict, /^signature mismatch/);
  }
  const before = received.length;
  const result = (await createCloudRequest(tamper((p) => p))([options], context())) as { status: number };
  t.equal(result.status, 200, 'unchanged, it passes');
  t.equal(received[before]?.verdict, 'ok');
});

t.test('option checks: exact TypeErrors that never show a secret', async (t) => {
  const ok = { method: 'GET', url: `${base}/?key=${SECRET}`, region: 'us-east-1', service: 's3', credentials: { ...credentials, sessionToken: TOKEN } };
  const cases: [string, unknown[], string][] = [
    ['no options', [], 'ld.cloudRequest takes an options object { method, url, region, service, credentials, ... }, got undefined'],
    ['a string', ['https://example.com'], 'ld.cloudRequest takes an options object { method, url, region, service, credentials, ... }, got a string'],
    [
      'an unknown option',
      [{ ...ok, params: { a: 1 } }],
      'ld.cloudRequest: unknown option "params" (the options are method, url, headers, body, region, service, credentials, responseType, timeout)',
    ],
    ['no method', [{ ...ok, method: undefined }], 'ld.cloudRequest: method is required (GET, POST, PUT, PATCH, DELETE)'],
    ['a bad method', [{ ...ok, method: 'FETCH' }], 'ld.cloudRequest: method must be one of GET, POST, PUT, PATCH, DELETE, got "FETCH"'],
    ['HEAD (as ld.request)', [{ ...ok, method: 'HEAD' }], 'ld.cloudRequest: method must be one of GET, POST, PUT, PATCH, DELETE, got "HEAD"'],
    ['no url', [{ ...ok, url: undefined }], 'ld.cloudRequest: url is required'],
    ['a url that is not a string', [{ ...ok, url: 42 }], 'ld.cloudRequest: url must be a string, got a number'],
    ['a relative url', [{ ...ok, url: `/path?secret=${SECRET}` }], 'ld.cloudRequest: url is not a valid absolute URL'],
    ['an ftp url', [{ ...ok, url: `ftp://example.com/${SECRET}` }], 'ld.cloudRequest: url must use http: or https:'],
    [
      'a url with a password',
      [{ ...ok, url: `https://user:${encodeURIComponent(SECRET)}@example.com/` }],
      'ld.cloudRequest: url must not contain a user name or password',
    ],
    [
      'a url with bytes that are not UTF-8',
      [{ ...ok, url: 'https://example.com/?q=%FF' }],
      'ld.cloudRequest: url has percent-encoded bytes that are not UTF-8',
    ],
    ['headers as an array', [{ ...ok, headers: [['a', 'b']] }], 'ld.cloudRequest: headers must be an object, got an array'],
    ['a bad header name', [{ ...ok, headers: { 'bad name': 'x' } }], 'ld.cloudRequest: "bad name" is not a valid header name'],
    [
      'an object header value',
      [{ ...ok, headers: { 'x-a': { secret: SECRET } } }],
      'ld.cloudRequest: the value of header "x-a" must be a string, got an object',
    ],
    [
      'a header with a line break',
      [{ ...ok, headers: { 'x-a': `${SECRET}\r\nx-b: 1` } }],
      'ld.cloudRequest: the value of header "x-a" must be ASCII text without line breaks',
    ],
    ['a non-ASCII header value', [{ ...ok, headers: { 'x-a': 'é' } }], 'ld.cloudRequest: the value of header "x-a" must be ASCII text without line breaks'],
    ['a number body', [{ ...ok, body: 42 }], 'ld.cloudRequest: body must be an object, a string or a byte array, got a number'],
    [
      'an array form body',
      [{ ...ok, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: [{ a: 1 }] }],
      'ld.cloudRequest: an application/x-www-form-urlencoded body must be an object, a string or a byte array, got an array',
    ],
    ['no region', [{ ...ok, region: undefined }], 'ld.cloudRequest: region is required'],
    ['an empty region', [{ ...ok, region: '' }], 'ld.cloudRequest: region must be a non-empty string, got a string'],
    ['a region with a slash', [{ ...ok, region: 'us-east-1/x' }], 'ld.cloudRequest: region may contain only letters, digits, ".", "_" and "-"'],
    ['a service that is not a string', [{ ...ok, service: ['s3'] }], 'ld.cloudRequest: service must be a non-empty string, got an array'],
    ['no credentials', [{ ...ok, credentials: undefined }], 'ld.cloudRequest: credentials is required ({ accessKeyId, secretAccessKey, sessionToken? })'],
    [
      'credentials as a string',
      [{ ...ok, credentials: `${ACCESS_KEY_ID}:${SECRET}` }],
      'ld.cloudRequest: credentials must be an object { accessKeyId, secretAccessKey, sessionToken? }, got a string',
    ],
    [
      'no access key id',
      [{ ...ok, credentials: { secretAccessKey: SECRET } }],
      'ld.cloudRequest: credentials.accessKeyId must be a non-empty string, got undefined',
    ],
    [
      'STS-style capitalised keys',
      [{ ...ok, credentials: { AccessKeyId: ACCESS_KEY_ID, SecretAccessKey: SECRET } }],
      'ld.cloudRequest: credentials.accessKeyId must be a non-empty string, got undefined',
    ],
    [
      'an access key id with a slash',
      [{ ...ok, credentials: { accessKeyId: `${SECRET}`, secretAccessKey: SECRET } }],
      'ld.cloudRequest: credentials.accessKeyId may contain only visible ASCII characters other than "/" and ","',
    ],
    [
      'no secret',
      [{ ...ok, credentials: { accessKeyId: ACCESS_KEY_ID } }],
      'ld.cloudRequest: credentials.secretAccessKey must be a non-empty string, got undefined',
    ],
    [
      'a secret that is not a string',
      [{ ...ok, credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: 12345678 } }],
      'ld.cloudRequest: credentials.secretAccessKey must be a non-empty string, got a number',
    ],
    [
      'a token that is not a string',
      [{ ...ok, credentials: { ...credentials, sessionToken: { token: TOKEN } } }],
      'ld.cloudRequest: credentials.sessionToken must be a string, got an object',
    ],
    [
      'a token with a line break',
      [{ ...ok, credentials: { ...credentials, sessionToken: `${TOKEN}\n` } }],
      'ld.cloudRequest: credentials.sessionToken may contain only visible ASCII characters',
    ],
    ['a bad responseType', [{ ...ok, responseType: 'xml' }], 'ld.cloudRequest: responseType must be one of json, text, stream, binary, got "xml"'],
    ['a negative timeout', [{ ...ok, timeout: -5 }], 'ld.cloudRequest: timeout must be a positive number of milliseconds, got -5'],
    ['a string timeout', [{ ...ok, timeout: '100' }], 'ld.cloudRequest: timeout must be a positive number of milliseconds, got "100"'],
  ];
  const before = calls.length;
  for (const [what, args, message] of cases) {
    const err = await cloudRequest(args, context()).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof GuestFacingError, `${what}: a guest-facing error`);
    t.equal((err as GuestFacingError).guestName, 'TypeError', `${what}: a TypeError`);
    const text = (err as GuestFacingError).message;
    t.equal(text, message, what);
    t.notOk(text.includes(SECRET) || text.includes(encodeURIComponent(SECRET)) || text.includes(TOKEN), `${what}: no secret in the message`);
  }
  t.equal(calls.length, before, 'nothing was sent');
  // The valid baseline does go through.
  t.equal((await call(ok)).got.verdict, 'ok');
});

t.test('FormData is refused: a signed request needs its exact body', async (t) => {
  const { GuestFormData } = await import('../../../runner/builtins/guest-boundary.js');
  const err = await cloudRequest(
    [{ method: 'POST', url: `${base}/`, region: 'us-east-1', service: 's3', credentials, body: new GuestFormData([['a', 'b']]) }],
    context(),
  ).then(
    () => undefined,
    (e: unknown) => e as GuestFacingError,
  );
  t.equal(err?.guestName, 'TypeError');
  t.equal(err?.message, 'ld.cloudRequest: body cannot be a FormData: a signed request needs its exact bytes (pass a string or a byte array)');
});

t.test('CLOUD registers ld.cloudRequest and its alias ld.awsRequest', async (t) => {
  const module = CLOUD(send);
  t.same(Object.keys(module.async ?? {}), ['cloudRequest']);
  t.equal(module.sync, undefined);
  t.same(module.bindings, [
    { guest: 'cloudRequest', host: 'cloudRequest', mode: 'http' },
    { guest: 'awsRequest', host: 'cloudRequest', mode: 'http' },
  ]);
  const { got } = await (async () => {
    const before = received.length;
    await module.async?.['cloudRequest']?.([{ method: 'GET', url: `${base}/alias`, region: 'us-east-1', service: 'execute-api', credentials }], context());
    return { got: received[before] };
  })();
  t.equal(got?.verdict, 'ok', 'the registered function signs too');
});
