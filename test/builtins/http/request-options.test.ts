/**
 * ld.request's options and results through a real runner (spec "ld.request(options)" and the FormData
 * sentence), against a loopback server the runner is allowed to reach (LDBOX_EGRESS_ALLOW=127.0.0.1):
 * every method, headers, params, each body kind as the server received it, each responseType, json
 * left undefined for a body that is not JSON, non-2xx statuses as results, and the exact TypeError of
 * each invalid option.
 */
import t from 'tap';
import { startTestRunner } from '../../helpers/runner-harness.js';
import { startEchoServer } from './echo-server.js';
import { CATCH, ErrorKind, runCode } from './run-code.js';

const runner = await startTestRunner({ LDBOX_EGRESS_ALLOW: '127.0.0.1', LDBOX_POOL_SIZE: '1' });
const server = await startEchoServer();
t.teardown(async () => {
  await runner.close();
  await server.close();
});
const base = server.origin;

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** Runs code that must succeed and returns its result. */
async function value(t: Test, code: string, input: Record<string, string | number> = {}) {
  const o = await runCode(runner, code, { base, ...input });
  t.same(o.error, undefined, 'no error');
  return o.result;
}

function last() {
  const r = server.received.at(-1);
  if (!r) throw new Error('the server received nothing');
  return r;
}

t.test('every method reaches the server; the result has status, headers, json and text', async (t) => {
  for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
    const r = await value(
      t,
      `const r = await ld.request({ method: '${method}', url: data.input.base + '/echo/' + '${method.toLowerCase()}' });
       return { status: r.status, ct: r.headers['content-type'], method: r.json.method, path: r.json.path, text: typeof r.text, keys: Object.keys(r).sort() };`,
    );
    t.same(
      r,
      { status: 200, ct: 'application/json', method, path: `/echo/${method.toLowerCase()}`, text: 'string', keys: ['headers', 'json', 'status', 'text'] },
      method,
    );
    t.equal(last().method, method, `the server saw ${method}`);
  }
  t.same(
    await value(t, `const r = await ld.request({ method: 'patch', url: data.input.base + '/echo' }); return r.json.method`),
    'PATCH',
    'a lower-case method is accepted',
  );
});

t.test('headers are sent; defaults for Accept and User-Agent can be overridden', async (t) => {
  await value(t, `await ld.request({ method: 'GET', url: data.input.base + '/h1', headers: { 'X-Api-Key': 'k-123', 'X-Count': 3 } }); return null`);
  t.equal(last().headers['x-api-key'], 'k-123');
  t.equal(last().headers['x-count'], '3', 'a number becomes a string');
  t.equal(last().headers['accept'], 'application/json, text/plain, */*', 'default Accept');
  t.equal(last().headers['user-agent'], 'ldbox', 'default User-Agent');
  t.equal(last().headers['accept-encoding'], 'gzip, deflate, br', 'default Accept-Encoding (responses are decoded)');
  await value(
    t,
    `await ld.request({ method: 'GET', url: data.input.base + '/h2', headers: { Accept: 'text/csv', 'user-agent': 'my-integration/1.0' } }); return null`,
  );
  t.equal(last().headers['accept'], 'text/csv');
  t.equal(last().headers['user-agent'], 'my-integration/1.0');
  await value(t, `await ld.request({ method: 'GET', url: 'http://alice:s%40cret@' + data.input.base.slice(7) + '/basic' }); return null`);
  t.equal(last().headers['authorization'], `Basic ${Buffer.from('alice:s@cret').toString('base64')}`, 'user info in the URL becomes Basic auth');
  t.equal(last().path, '/basic');
});

t.test('response headers: lower-case names, repeated ones joined', async (t) => {
  t.same(
    await value(
      t,
      `const r = await ld.request({ method: 'GET', url: data.input.base + '/headers' }); return [r.headers['set-cookie'], r.headers['x-custom'], r.headers['X-Custom']]`,
    ),
    ['a=1; Path=/, b=2', 'yes', null],
  );
});

t.test('params are merged into the query string', async (t) => {
  await value(
    t,
    `await ld.request({ method: 'GET', url: data.input.base + '/q?keep=a%20b&x=1', params: { x: 2, s: 'hello world', flag: true, list: ['a', 'b'], skip: null, nested: { k: 1 }, 'ü&=': 'é' } }); return null`,
  );
  t.equal(last().path, '/q?keep=a%20b&x=1&x=2&s=hello+world&flag=true&list=a&list=b&nested=%7B%22k%22%3A1%7D&%C3%BC%26%3D=%C3%A9');
  await value(t, `await ld.request({ method: 'GET', url: data.input.base + '/q2', params: { a: 1 } }); return null`);
  t.equal(last().path, '/q2?a=1', 'a URL without a query gets one');
  await value(t, `await ld.request({ method: 'GET', url: data.input.base + '/q3', params: {} }); return null`);
  t.equal(last().path, '/q3', 'empty params change nothing');
});

t.test('bodies', async (t) => {
  t.test('an object is sent as JSON', async (t) => {
    await value(t, `await ld.request({ method: 'POST', url: data.input.base + '/json', body: { a: 1, list: [true, null], s: 'é' } }); return null`);
    t.equal(last().headers['content-type'], 'application/json');
    t.equal(last().body.toString('utf8'), '{"a":1,"list":[true,null],"s":"é"}');
    await value(
      t,
      `await ld.request({ method: 'PUT', url: data.input.base + '/json', body: [1, 2], headers: { 'Content-Type': 'application/vnd.api+json' } }); return null`,
    );
    t.equal(last().headers['content-type'], 'application/vnd.api+json', 'a given Content-Type stands');
    t.equal(last().body.toString('utf8'), '[1,2]');
  });
  t.test('with Content-Type application/x-www-form-urlencoded an object is form-encoded', async (t) => {
    await value(
      t,
      `await ld.request({ method: 'POST', url: data.input.base + '/form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: { grant_type: 'client_credentials', scope: 'a b', n: 5, tags: ['x', 'y'], none: undefined } }); return null`,
    );
    t.equal(last().headers['content-type'], 'application/x-www-form-urlencoded');
    t.equal(last().body.toString('utf8'), 'grant_type=client_credentials&scope=a+b&n=5&tags=x&tags=y');
  });
  t.test('a string is sent as it is', async (t) => {
    await value(t, `await ld.request({ method: 'POST', url: data.input.base + '/s', headers: { 'Content-Type': 'text/xml' }, body: '<a>1</a>' }); return null`);
    t.equal(last().headers['content-type'], 'text/xml');
    t.equal(last().body.toString('utf8'), '<a>1</a>');
    await value(
      t,
      `await ld.request({ method: 'POST', url: data.input.base + '/s', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=%20' }); return null`,
    );
    t.equal(last().body.toString('utf8'), 'a=1&b=%20', 'a urlencoded string is not encoded again');
    await value(t, `await ld.request({ method: 'POST', url: data.input.base + '/s', body: '{"raw":true}' }); return null`);
    t.equal(last().headers['content-type'], undefined, 'no Content-Type is made up for a string');
    t.equal(last().body.toString('utf8'), '{"raw":true}');
  });
  t.test('bytes are sent as they are', async (t) => {
    await value(t, `await ld.request({ method: 'PUT', url: data.input.base + '/b', body: new Uint8Array([0, 1, 255]) }); return null`);
    t.same([...last().body], [0, 1, 255]);
  });
  t.test('a FormData is sent as multipart/form-data', async (t) => {
    await value(
      t,
      `const form = new FormData();
       form.append('title', 'Quarterly report');
       form.append('count', 3);
       form.append('file', btoa('%PDF-1.4 fake'), 'report.pdf');
       form.append('notes', btoa('line1\\nline2'), 'notes.txt');
       form.append('raw', new Uint8Array([1, 2, 255]));
       await ld.request({ method: 'POST', url: data.input.base + '/upload', body: form, headers: { 'Content-Type': 'multipart/form-data', 'X-Trace': 't1' } });
       return null`,
    );
    const rec = last();
    const ct = rec.headers['content-type'] ?? '';
    t.match(ct, /^multipart\/form-data; boundary=\S+$/, 'the Content-Type carries the boundary (the bare one given is replaced)');
    t.equal(rec.headers['x-trace'], 't1');
    // Parsed by Node's own fetch implementation, independent of the runner's copy of undici.
    const parsed = await new Response(new Uint8Array(rec.body), { headers: { 'content-type': ct } }).formData();
    const names: string[] = [];
    parsed.forEach((_v, k) => {
      names.push(k);
    });
    t.same(names, ['title', 'count', 'file', 'notes', 'raw']);
    t.equal(parsed.get('title'), 'Quarterly report');
    t.equal(parsed.get('count'), '3');
    const file = parsed.get('file') as File;
    t.equal(file.name, 'report.pdf');
    t.equal(file.type, 'application/pdf');
    t.equal(await file.text(), '%PDF-1.4 fake', 'the base64 content is decoded');
    const notes = parsed.get('notes') as File;
    t.same([notes.name, notes.type, await notes.text()], ['notes.txt', 'text/plain', 'line1\nline2']);
    const bytes = parsed.get('raw') as File;
    t.same(
      [bytes.name, bytes.type, [...new Uint8Array(await bytes.arrayBuffer())]],
      ['blob', 'application/octet-stream', [1, 2, 255]],
      'bytes without a file name',
    );
    const raw = rec.body.toString('latin1');
    t.match(raw, 'Content-Disposition: form-data; name="file"; filename="report.pdf"\r\nContent-Type: application/pdf');
  });
  t.test('a FormData file with invalid base64 is refused', async (t) => {
    const o = await runCode(
      runner,
      `const f = new FormData(); f.append('file', 'not base64!', 'a.bin'); ${CATCH(`ld.request({ method: 'POST', url: data.input.base + '/x', body: f })`)}`,
      { base },
    );
    t.same(o.result, ['TypeError', 'ld.request: the content of FormData file "file" (a.bin) is not valid base64', true]);
  });
});

t.test('responseType', async (t) => {
  t.test('default and json: text plus json, json undefined when the body is not JSON', async (t) => {
    for (const rt of ['undefined', "'json'", "'text'"]) {
      t.same(
        await value(
          t,
          `const a = await ld.request({ method: 'GET', url: data.input.base + '/echo', responseType: ${rt} });
           const b = await ld.request({ method: 'GET', url: data.input.base + '/text', responseType: ${rt} });
           return [a.status, a.json.method, typeof a.text, b.status, b.text, 'json' in b, b.json === undefined, b.headers['content-type']];`,
        ),
        [200, 'GET', 'string', 200, 'plain words, not JSON', true, true, 'text/plain'],
        `responseType ${rt}`,
      );
    }
    t.same(
      await value(t, `const r = await ld.request({ method: 'GET', url: data.input.base + '/latin1' }); return r.text`),
      'café',
      'the charset of the Content-Type is honoured',
    );
    t.same(
      await value(t, `const r = await ld.request({ method: 'GET', url: data.input.base + '/gzip' }); return [r.json, r.headers['content-encoding'] ?? null]`),
      [{ zipped: true }, null],
      'a gzip body is decoded (and no longer says it is encoded)',
    );
  });
  t.test('binary and stream: buffer (ArrayBuffer) and success, no json or text', async (t) => {
    for (const rt of ['binary', 'stream']) {
      t.same(
        await value(
          t,
          `const r = await ld.request({ method: 'GET', url: data.input.base + '/bytes?n=300', responseType: '${rt}' });
           const u = new Uint8Array(r.buffer);
           return { keys: Object.keys(r).sort(), isAB: r.buffer instanceof ArrayBuffer, len: r.buffer.byteLength, first: Array.from(u.slice(0, 3)), at256: u[256], success: r.success, status: r.status, ct: r.headers['content-type'] };`,
        ),
        {
          keys: ['buffer', 'headers', 'status', 'success'],
          isAB: true,
          len: 300,
          first: [0, 1, 2],
          at256: 0,
          success: true,
          status: 200,
          ct: 'application/octet-stream',
        },
        rt,
      );
    }
    t.same(
      await value(
        t,
        `const r = await ld.request({ method: 'GET', url: data.input.base + '/echo?status=404', responseType: 'binary' }); return [r.status, r.success, r.buffer.byteLength > 0]`,
      ),
      [404, false, true],
      'success is false outside 2xx',
    );
  });
});

t.test('non-2xx statuses are results, not throws', async (t) => {
  t.same(
    await value(
      t,
      `const out = [];
       for (const s of [201, 204, 400, 401, 404, 418, 500, 503]) {
         const r = await ld.request({ method: 'POST', url: data.input.base + '/echo?status=' + s });
         out.push([r.status, s === 204 ? r.text : r.json.method]);
       }
       return out;`,
    ),
    [
      [201, 'POST'],
      [204, ''],
      [400, 'POST'],
      [401, 'POST'],
      [404, 'POST'],
      [418, 'POST'],
      [500, 'POST'],
      [503, 'POST'],
    ],
  );
});

t.test('invalid options are refused with a TypeError that says what is wrong', async (t) => {
  const cases: [string, string][] = [
    ['ld.request()', 'ld.request takes an options object { method, url, ... }, got undefined'],
    ["ld.request('https://example.com')", 'ld.request takes an options object { method, url, ... }, got "https://example.com"'],
    ['ld.request({ url: data.input.base })', 'ld.request: method is required (GET, POST, PUT, PATCH or DELETE)'],
    ["ld.request({ method: 'HEAD', url: data.input.base })", 'ld.request: method must be GET, POST, PUT, PATCH or DELETE, got "HEAD"'],
    ["ld.request({ method: 'OPTIONS', url: data.input.base })", 'ld.request: method must be GET, POST, PUT, PATCH or DELETE, got "OPTIONS"'],
    ['ld.request({ method: 1, url: data.input.base })', 'ld.request: method must be GET, POST, PUT, PATCH or DELETE, got 1'],
    ["ld.request({ method: 'GET' })", 'ld.request: url must be a string, got undefined'],
    ["ld.request({ method: 'GET', url: { href: 'x' } })", 'ld.request: url must be a string, got an object'],
    [
      "ld.request({ method: 'GET', url: '/relative/path' })",
      'ld.request: url must be an absolute URL such as https://api.example.com/items, got "/relative/path"',
    ],
    [
      "ld.request({ method: 'GET', url: 'api.example.com/x?api_key=k1#f' })",
      'ld.request: url must be an absolute URL such as https://api.example.com/items, got "api.example.com/x"',
    ],
    ["ld.request({ method: 'GET', url: 'file:///etc/passwd' })", 'ld.request: url must be http: or https:, got "file:"'],
    ["ld.request({ method: 'GET', url: 'ftp://example.com/x' })", 'ld.request: url must be http: or https:, got "ftp:"'],
    ["ld.request({ method: 'GET', url: data.input.base, headers: 'x' })", 'ld.request: headers must be an object, got "x"'],
    ["ld.request({ method: 'GET', url: data.input.base, headers: [['a', 'b']] })", 'ld.request: headers must be an object, got an array'],
    ["ld.request({ method: 'GET', url: data.input.base, headers: { a: { b: 1 } } })", 'ld.request: the value of header "a" must be a string, got an object'],
    ["ld.request({ method: 'GET', url: data.input.base, headers: { 'bad name': 'x' } })", 'ld.request: "bad name" is not a valid header name'],
    [
      "ld.request({ method: 'GET', url: data.input.base, headers: { a: 'x\\r\\nInjected: 1' } })",
      'ld.request: the value of header "a" must not contain line breaks or NUL',
    ],
    ["ld.request({ method: 'GET', url: data.input.base, params: 'a=1' })", 'ld.request: params must be an object, got "a=1"'],
    ["ld.request({ method: 'GET', url: data.input.base, params: [1] })", 'ld.request: params must be an object, got an array'],
    ["ld.request({ method: 'GET', url: data.input.base, responseType: 'blob' })", 'ld.request: responseType must be json, text, stream or binary, got "blob"'],
    ["ld.request({ method: 'GET', url: data.input.base, timeout: -1 })", 'ld.request: timeout must be a positive number of milliseconds, got -1'],
    ["ld.request({ method: 'GET', url: data.input.base, timeout: '100' })", 'ld.request: timeout must be a positive number of milliseconds, got "100"'],
    ["ld.request({ method: 'GET', url: data.input.base, timeout: Infinity })", 'ld.request: timeout must be a positive number of milliseconds, got Infinity'],
    [
      "ld.request({ method: 'POST', url: data.input.base, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: [1] })",
      'ld.request: an application/x-www-form-urlencoded body must be an object or a string, got an array',
    ],
  ];
  const before = server.received.length;
  for (const [call, message] of cases) {
    const o = await runCode(runner, CATCH(call), { base });
    t.same(o.result, ['TypeError', message, true], call);
  }
  t.equal(server.received.length, before, 'nothing was sent');
  const o = await runCode(
    runner,
    `ld.request({ method: 'TRACE', url: data.input.base }).catch((e) => null); return 'the error is a rejection, caught by .catch'`,
    { base },
  );
  t.same(o.result, 'the error is a rejection, caught by .catch');
  const thrown = await runCode(runner, `return await ld.request({ method: 'GET', url: 'nope' })`, { base });
  t.same(
    thrown.error,
    {
      kind: ErrorKind.THROWN,
      name: 'TypeError',
      message: 'ld.request: url must be an absolute URL such as https://api.example.com/items, got "nope"',
    },
    'uncaught, it ends the call as THROWN',
  );
});

t.test('network failures are clear errors, and the sandbox keeps serving', async (t) => {
  const closed = await startEchoServer();
  const deadPort = closed.port;
  await closed.close();
  t.same(
    (await runCode(runner, CATCH(`ld.request({ method: 'GET', url: 'http://127.0.0.1:${deadPort}/items?token=secret-in-query' })`))).result,
    ['Error', `ld.request failed: connection refused (GET http://127.0.0.1:${deadPort}/items)`, true],
    'connection refused; the query is not in the message',
  );
  t.same(
    (await runCode(runner, CATCH(`ld.request({ method: 'GET', url: data.input.base.replace('http:', 'https:') + '/tls' })`), { base })).result,
    ['Error', `ld.request failed: TLS error (ERR_SSL_WRONG_VERSION_NUMBER) (GET https://127.0.0.1:${server.port}/tls)`, true],
    'TLS to a plain-HTTP server',
  );
  t.same(await value(t, `const r = await ld.request({ method: 'GET', url: data.input.base + '/echo' }); return r.status`), 200, 'still serving');
});

t.test('secrets of data.auth are redacted from error messages', async (t) => {
  const o = await runCode(
    runner,
    CATCH(`ld.request({ method: 'GET', url: 'http://127.0.0.1:1/' + data.auth.token + '/x' })`),
    {},
    { auth: { token: 'tok-abcdef123456' } },
  );
  t.same(o.result, ['Error', 'ld.request failed: connection refused (GET http://127.0.0.1:1/[REDACTED]/x)', true]);
});
