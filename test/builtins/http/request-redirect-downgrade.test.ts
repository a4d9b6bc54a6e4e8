/**
 * A redirect from https to http (runner/builtins/http/send-request.ts), in process: the first hop is
 * a TLS server on 127.0.0.1, the redirect goes to a plain HTTP server on 127.0.0.1. On the downgrade
 * Authorization, Cookie, Proxy-Authorization and every header carrying a value of `data.auth` are
 * dropped (the call's redaction says which values are secrets); other headers go on. A redirect
 * within the TLS origin keeps them all.
 */
import t from 'tap';
import { Agent } from 'undici';
import type { BuiltinContext } from '../../../runner/builtins/guest-boundary.js';
import { EgressGuard } from '../../../runner/builtins/http/egress-guard.js';
import { sendRequest } from '../../../runner/builtins/http/send-request.js';
import { collectSecrets, createRedactor } from '../../../runner/sandbox/redactor.js';
import { startEchoServer } from './echo-server.js';

// A self-signed P-256 certificate for localhost and 127.0.0.1 (valid until 2126), only for this test.
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgYJEtTP/pnJzLz5RV
u9gfaqbYOJkgjrfU3/goDuAYSNahRANCAAQs+vUeicETF8eiyRuZi0kvpoEBqjtL
+c/fANAb836/shRnTEKvkvxCHEKWsrWoq8vSQoAXfVoaywk2qAu/ZZpf
-----END PRIVATE KEY-----
`;
const CERT = `-----BEGIN CERTIFICATE-----
MIIBnDCCAUGgAwIBAgIURJ9X6UMNEdykUo3+6VvsDeBUZFIwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNDIwMjMwM1oYDzIxMjYxMDMx
MjAyMzAzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQs+vUeicETF8eiyRuZi0kvpoEBqjtL+c/fANAb836/shRnTEKvkvxC
HEKWsrWoq8vSQoAXfVoaywk2qAu/ZZpfo28wbTAdBgNVHQ4EFgQUOzQ5qkx1mjza
PKaYJSDoxZiDom8wHwYDVR0jBBgwFoAUOzQ5qkx1mjzaPKaYJSDoxZiDom8wDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDSQAwRgIhANVc2sCK/AFM3NYDYzQhbVr05zf01vuOx+Fl+lz8TthMAiEA
tKgWKHZ6H6MpylJqCoM4RLnhJ21ESIapHklr3xddJOM=
-----END CERTIFICATE-----
`;

const secure = await startEchoServer('127.0.0.1', { key: KEY, cert: CERT });
const plain = await startEchoServer('127.0.0.1');
// The egress guard is opened for 127.0.0.1 only; certificate checks are not what this test is about
// (and a clock behind the certificate's start must not fail it).
const agent = { guard: new EgressGuard(['127.0.0.1']), dispatcher: new Agent({ connect: { rejectUnauthorized: false } }) };
t.teardown(async () => {
  await agent.dispatcher.close();
  await Promise.all([secure.close(), plain.close()]);
});

const auth = { apiKey: 'k-9f8e7d6c5b4a', nested: { password: 'hunter2-pass' } };

function context(): BuiltinContext {
  return {
    signal: new AbortController().signal,
    deadline: performance.now() + 5000,
    redact: createRedactor(collectSecrets(auth)),
    config: { egressAllow: ['127.0.0.1'], maxResponseBytes: 1 << 20, maxRequestsPerCall: 100 },
    counters: { requests: 0 },
    log: () => undefined,
    onEnd: () => () => undefined,
  };
}

const HEADERS = {
  authorization: 'Bearer t-1',
  cookie: 'sid=1',
  'proxy-authorization': 'Basic cHJveHk6cHc=',
  'x-api-key': auth.apiKey,
  'x-signature': `sig=${Buffer.from(`user:${auth.nested.password}`).toString('base64')}`,
  'x-other': 'kept',
};

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

async function echoedHeaders(t: Test, url: string): Promise<Record<string, string>> {
  const res = await sendRequest({ method: 'GET', url, headers: HEADERS, body: undefined }, { responseType: 'text', agent }, context());
  t.equal(res.status, 200);
  return (JSON.parse((res as { text: string }).text) as { headers: Record<string, string> }).headers;
}

const pick = (h: Record<string, string>) => Object.fromEntries(Object.keys(HEADERS).map((k) => [k, h[k]]));

t.test('a redirect within the https origin keeps every header', async (t) => {
  const to = encodeURIComponent('/echo/same');
  t.same(pick(await echoedHeaders(t, `${secure.origin}/redirect?to=${to}`)), HEADERS);
  t.equal(secure.received.at(-1)?.path, '/echo/same', 'served by the TLS server');
});

t.test('an https to http downgrade drops the credentials and every header holding a secret', async (t) => {
  const start = plain.received.length;
  for (const status of [301, 302, 307, 308]) {
    const to = encodeURIComponent(`${plain.origin}/echo/down`);
    t.same(
      pick(await echoedHeaders(t, `${secure.origin}/redirect?status=${status}&to=${to}`)),
      { ...Object.fromEntries(Object.keys(HEADERS).map((k) => [k, undefined])), 'x-other': 'kept' },
      `${status}: only x-other reaches http`,
    );
  }
  t.same(
    plain.received.slice(start).map((r) => r.path),
    ['/echo/down', '/echo/down', '/echo/down', '/echo/down'],
    'the downgraded hops were made',
  );
});
