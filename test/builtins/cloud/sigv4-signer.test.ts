/**
 * The parts of runner/builtins/cloud/sigv4-signer.ts the AWS test suite does not reach: which services get
 * X-Amz-Content-Sha256, a caller's own payload hash, the Host header, the encoding of what is sent, and
 * repeated header names. Each signature is checked against the reference computation (sigv4-reference.ts)
 * run on the request as it would be received.
 */
import t from 'tap';
import { normalizeRequestUrl, signSigV4, SigV4InputError, type SigV4Params, type SigV4Request } from '../../../runner/builtins/cloud/sigv4-signer.js';
import { canonicalRequest, sha256Hex, signature } from './sigv4-reference.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const DATE = new Date('2024-02-29T23:59:58Z');
const AMZ_DATE = '20240229T235958Z';

function params(service: string, extra: Partial<SigV4Params> = {}): SigV4Params {
  return { region: 'eu-central-1', service, credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: SECRET }, signingDate: DATE, ...extra };
}

/** Signs, then verifies the result as a service would from what goes on the wire. */
async function signAndVerify(t: Test, request: SigV4Request, p: SigV4Params) {
  const signed = await signSigV4(request, p);
  const url = new URL(signed.url);
  const m = /SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(signed.headers['authorization'] ?? '');
  t.ok(m, 'an Authorization header');
  const body = request.body ?? '';
  const creq = canonicalRequest({
    method: request.method,
    path: url.pathname,
    query: url.search.slice(1),
    headers: Object.entries(signed.headers),
    signedHeaders: (m?.[1] ?? '').split(';'),
    payloadHash: signed.headers['x-amz-content-sha256'] ?? sha256Hex(body),
    s3: p.service === 's3',
  });
  t.equal(m?.[2], signature(creq, { secretAccessKey: SECRET, amzDate: AMZ_DATE, region: p.region, service: p.service }), 'the reference computation agrees');
  return { signed, url, signedHeaders: (m?.[1] ?? '').split(';') };
}

t.test('X-Amz-Content-Sha256: on for services that require it, off otherwise, an option either way', async (t) => {
  const body = 'hello';
  for (const service of ['s3', 's3express', 'glacier', 'aoss']) {
    const { signed, signedHeaders } = await signAndVerify(t, { method: 'PUT', url: 'https://h.example/k', body }, params(service));
    t.equal(signed.headers['x-amz-content-sha256'], sha256Hex(body), `${service}: sent`);
    t.ok(signedHeaders.includes('x-amz-content-sha256'), `${service}: signed`);
  }
  for (const service of ['execute-api', 'dynamodb', 'sts']) {
    const { signed } = await signAndVerify(t, { method: 'POST', url: 'https://h.example/', body }, params(service));
    t.notOk('x-amz-content-sha256' in signed.headers, `${service}: not sent`);
  }
  const on = await signAndVerify(t, { method: 'POST', url: 'https://h.example/', body }, params('execute-api', { contentSha256: true }));
  t.equal(on.signed.headers['x-amz-content-sha256'], sha256Hex(body), 'contentSha256: true');
  const off = await signAndVerify(t, { method: 'PUT', url: 'https://h.example/k', body }, params('s3', { contentSha256: false }));
  t.notOk('x-amz-content-sha256' in off.signed.headers, 'contentSha256: false');
});

t.test("a caller's X-Amz-Content-Sha256 is kept and is the payload hash (e.g. UNSIGNED-PAYLOAD)", async (t) => {
  const { signed, signedHeaders } = await signAndVerify(
    t,
    { method: 'PUT', url: 'https://h.example/k', headers: { 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' }, body: 'anything' },
    params('s3'),
  );
  t.equal(signed.headers['x-amz-content-sha256'], 'UNSIGNED-PAYLOAD');
  t.ok(signedHeaders.includes('x-amz-content-sha256'));
});

t.test('Host comes from the URL, default port left out; the caller cannot change it', async (t) => {
  const a = await signAndVerify(t, { method: 'GET', url: 'https://H.Example:8443/', headers: { Host: 'other.example' } }, params('execute-api'));
  t.equal(a.signed.headers['host'], 'h.example:8443');
  const b = await signAndVerify(t, { method: 'GET', url: 'https://h.example:443/' }, params('execute-api'));
  t.equal(b.signed.headers['host'], 'h.example');
  const c = await signAndVerify(t, { method: 'GET', url: 'http://[::1]:8080/' }, params('execute-api'));
  t.equal(c.signed.headers['host'], '[::1]:8080');
  t.same(Object.keys(a.signed.headers).sort(), ['authorization', 'host', 'x-amz-date'], 'names in lower case');
});

t.test('what is sent: strict encoding of path and query, fragment dropped', async (t) => {
  const cases: [string, string][] = [
    ['https://h.example/a b/ü/%7e/%2F?x=1#frag', 'https://h.example/a%20b/%C3%BC/~/%2F?x=1'],
    ['https://h.example/?acl', 'https://h.example/?acl'],
    ['https://h.example/?q=100%&r=a+b&s=%2B', 'https://h.example/?q=100%25&r=a%20b&s=%2B'],
    ["https://h.example/!'()*?k=!'()*", 'https://h.example/%21%27%28%29%2A?k=%21%27%28%29%2A'],
    ['https://h.example/x/./y/../z', 'https://h.example/x/z'],
  ];
  for (const [input, sent] of cases) {
    const { signed } = await signAndVerify(t, { method: 'GET', url: input }, params('execute-api'));
    t.equal(signed.url, sent, input);
    const s3 = await signAndVerify(t, { method: 'GET', url: input }, params('s3'));
    t.equal(s3.signed.url, sent, `${input} (s3)`);
  }
});

t.test('URLs that cannot be signed', async (t) => {
  const cases: [string, string][] = [
    ['not a url', 'is not a valid absolute URL'],
    ['ftp://h.example/', 'must use http: or https:'],
    ['https://u:p@h.example/', 'must not contain a user name or password'],
    ['https://h.example/%C3', 'has percent-encoded bytes that are not UTF-8'],
  ];
  for (const [url, message] of cases) {
    const err = (() => {
      try {
        normalizeRequestUrl(url);
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    t.ok(err instanceof SigV4InputError, `${url}: a SigV4InputError`);
    t.equal((err as Error).message, message, url);
  }
});

t.test('repeated header names are joined in order; a session token replaces a caller token header', async (t) => {
  const { signed } = await signAndVerify(
    t,
    {
      method: 'GET',
      url: 'https://h.example/',
      headers: [
        ['X-Multi', ' b '],
        ['x-multi', 'a'],
        ['X-Amz-Security-Token', 'stale'],
        ['Authorization', 'Basic x'],
        ['X-Amz-Date', '19990101T000000Z'],
        ['__proto__', 'p'],
      ],
    },
    params('execute-api', { credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: SECRET, sessionToken: 'fresh' } }),
  );
  t.equal(signed.headers['x-multi'], 'b,a');
  t.equal(signed.headers['x-amz-security-token'], 'fresh');
  t.equal(signed.headers['x-amz-date'], AMZ_DATE);
  t.match(
    signed.headers['authorization'],
    /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20240229\/eu-central-1\/execute-api\/aws4_request, SignedHeaders=__proto__;host;x-amz-date;x-amz-security-token;x-multi, /,
  );
  t.equal(Object.getOwnPropertyDescriptor(signed.headers, '__proto__')?.value, 'p', 'a header named __proto__ stays a header');
});
