/** The webhook route's pure parts: URL scrubbing for logs, query/form objects, Content-Type, token buckets. */
import t from 'tap';
import { RateLimiter } from '../../gateway/rate-limiter.js';
import { WEBHOOK_ERRORS } from '../../gateway/webhook-errors.js';
import { bodyKind, paramsToObject, parseBody, queryObject, scrubUrl } from '../../gateway/webhook-payload.js';

t.test('scrubUrl replaces every value of a parameter that decodes to "secret"', async (t) => {
  t.equal(scrubUrl('/api/hooks/workflows/wf?secret=abc&x=1'), '/api/hooks/workflows/wf?secret=[REDACTED]&x=1');
  t.equal(scrubUrl('/p?x=1&secret=a&secret=b'), '/p?x=1&secret=[REDACTED]&secret=[REDACTED]');
  t.equal(scrubUrl('/p?s%65cret=abc'), '/p?s%65cret=[REDACTED]', 'percent-encoded name');
  t.equal(scrubUrl('/p?SECRET=abc'), '/p?SECRET=[REDACTED]', 'any case');
  t.equal(scrubUrl('/p?secret'), '/p?secret=[REDACTED]');
  t.equal(scrubUrl('/p?secretive=1&%zz=2'), '/p?secretive=1&%zz=2', 'other names and bad escapes kept');
  t.equal(scrubUrl('/p'), '/p');
});

t.test('query and form objects', async (t) => {
  t.equal(JSON.stringify(queryObject('?a=1&secret=s&a=2&b=&a=3')), '{"a":["1","2","3"],"b":""}');
  t.equal(JSON.stringify(queryObject('')), '{}');
  t.equal(JSON.stringify(paramsToObject(new URLSearchParams('constructor=1&__proto__=2'))), '{"constructor":"1","__proto__":"2"}');
  t.equal(Object.getPrototypeOf(queryObject('?a=1')), null, 'no prototype');
});

t.test('Content-Type → body kind', async (t) => {
  t.equal(bodyKind(undefined), 'json');
  t.equal(bodyKind(''), 'json');
  t.equal(bodyKind('Application/JSON; charset=UTF-8'), 'json');
  t.equal(bodyKind('application/cloudevents+json'), 'json');
  t.equal(bodyKind('application/x-www-form-urlencoded;charset=utf-8'), 'form');
  t.equal(bodyKind('Text/Plain; charset=utf-8'), 'text');
  for (const ct of ['text/html', 'multipart/form-data; boundary=x', 'application/xml', 'application/jsonx', 'application/+json']) {
    t.throws(() => bodyKind(ct), { code: 'unsupported_content_type', status: 400 }, ct);
  }
  t.throws(() => parseBody(Buffer.from([0xff, 0xfe]), 'json'), { code: 'invalid_json', message: 'request body is not valid UTF-8' });
  t.strictSame(parseBody(Buffer.alloc(0), 'form'), {});
});

t.test('token bucket: burst of max(1, rate), then one token per 1/rate s', async (t) => {
  let now = 0;
  const l = new RateLimiter(() => now);
  t.same([l.take('a', 3), l.take('a', 3), l.take('a', 3), l.take('a', 3)], [0, 0, 0, 1]);
  now += 334;
  t.equal(l.take('a', 3), 0, 'a token after 1/3 s');
  t.equal(l.take('a', 3), 1);
  t.equal(l.take('b', 3), 0, 'buckets are per key');
  t.equal(l.take('c', 0), 0, 'rate 0 = off');
  t.equal(l.size, 2);
  l.forget('a');
  t.equal(l.size, 1);
  const slow = new RateLimiter(() => now);
  t.same([slow.take('s', 0.25), slow.take('s', 0.25)], [0, 4], 'fractional rate: 1 token per 4 s');
});

t.test('the error table', async (t) => {
  t.same(WEBHOOK_ERRORS, {
    invalid_workflow_id: 400,
    missing_secret: 400,
    invalid_secret: 400,
    unsupported_content_type: 400,
    invalid_json: 400,
    body_not_object: 400,
    missing_signature: 400,
    bad_signature: 400,
    stale_signature: 400,
    replayed_signature: 400,
    invalid_verify_token: 400,
    invalid_handshake: 400,
    body_too_deep: 400,
    invalid_idempotency_key: 400,
    workflow_not_found: 404,
    not_found: 404,
    method_not_allowed: 405,
    payload_too_large: 413,
    rate_limited: 429,
    spending_cap_reached: 429,
    internal_error: 500,
    queue_unavailable: 503,
    queue_full: 503,
    not_ready: 503,
  });
});
