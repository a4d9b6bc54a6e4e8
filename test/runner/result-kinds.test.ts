/**
 * Result kinds through a real runner (spec "File result shape", "Native search integration result",
 * "Native download result"; runner.proto ResultKind): the shape checks, the INVALID_RESULT messages that
 * name the field, and what is delivered in `result`, `files` and `download`.
 */
import { type JsonValue, toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import t from 'tap';
import { ErrorKind, type ExecuteResponse, ResultKind } from '../../src/gen/ldbox/runner/v1/runner_pb.js';
import { startTestRunner } from '../helpers/runner-harness.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const runner = await startTestRunner();
t.teardown(() => runner.close());

const json = (res: ExecuteResponse): JsonValue | undefined => (res.result === undefined ? undefined : toJson(ValueSchema, res.result));

async function execute(resultKind: ResultKind, code: string): Promise<ExecuteResponse> {
  return runner.grpc.execute({ code, resultKind });
}

/** Runs code that must succeed; returns the response. */
async function ok(t: Test, resultKind: ResultKind, code: string): Promise<ExecuteResponse> {
  const res = await execute(resultKind, code);
  t.same(res.error && { name: res.error.name, message: res.error.message }, undefined, 'no error');
  return res;
}

/** Runs code whose result must be refused; checks the kind and name, returns the message. */
async function invalid(t: Test, resultKind: ResultKind, code: string): Promise<string | undefined> {
  const res = await execute(resultKind, code);
  t.equal(res.error?.kind, ErrorKind.INVALID_RESULT, 'ERROR_KIND_INVALID_RESULT');
  t.equal(res.error?.name, 'InvalidResultError', 'named InvalidResultError');
  t.same(json(res), undefined, 'no result');
  t.same([res.files.length, res.download], [0, undefined], 'no files and no download');
  return res.error?.message;
}

const bytes = (u: Uint8Array | undefined) => (u === undefined ? undefined : [...u]);

t.test('RESULT_KIND_FILES', async (t) => {
  t.test('one file with text', async (t) => {
    const res = await ok(t, ResultKind.FILES, "return {files: {fileName: 'a.txt', mimeType: 'text/plain', text: 'héllo'}}");
    t.same(json(res), { files: { fileName: 'a.txt', mimeType: 'text/plain', text: 'héllo' } }, 'result is the value as returned');
    t.equal(res.files.length, 1);
    t.same(
      res.files.map((f) => ({ fileName: f.fileName, mimeType: f.mimeType, content: bytes(f.content), isText: f.isText })),
      [{ fileName: 'a.txt', mimeType: 'text/plain', content: [...Buffer.from('héllo', 'utf8')], isText: true }],
      'text is delivered as UTF-8',
    );
  });

  t.test('one file with base64', async (t) => {
    const res = await ok(t, ResultKind.FILES, "return {files: {fileName: 'a.bin', mimeType: 'application/octet-stream', base64: 'AQID/w=='}}");
    t.same(
      res.files.map((f) => ({ fileName: f.fileName, mimeType: f.mimeType, content: bytes(f.content), isText: f.isText })),
      [{ fileName: 'a.bin', mimeType: 'application/octet-stream', content: [1, 2, 3, 255], isText: false }],
      'base64 is decoded',
    );
  });

  t.test('a list of files', async (t) => {
    const res = await ok(
      t,
      ResultKind.FILES,
      "return {files: [{fileName: 'a.txt', mimeType: 'text/plain', text: 'hi'}, {fileName: 'b.png', mimeType: 'image/png', base64: btoa('\\u0089PNG')}]}",
    );
    t.same(
      res.files.map((f) => ({ fileName: f.fileName, mimeType: f.mimeType, content: bytes(f.content), isText: f.isText })),
      [
        { fileName: 'a.txt', mimeType: 'text/plain', content: [104, 105], isText: true },
        { fileName: 'b.png', mimeType: 'image/png', content: [0x89, 0x50, 0x4e, 0x47], isText: false },
      ],
    );
    t.same(json(res), {
      files: [
        { fileName: 'a.txt', mimeType: 'text/plain', text: 'hi' },
        { fileName: 'b.png', mimeType: 'image/png', base64: 'iVBORw==' },
      ],
    });
    const viaConnect = await runner.connect.execute({
      resultKind: ResultKind.FILES,
      code: "return {files: [{fileName: 'a.txt', mimeType: 'text/plain', text: 'hi'}, {fileName: 'b.png', mimeType: 'image/png', base64: btoa('\\u0089PNG')}]}",
    });
    t.same(
      viaConnect.files.map((f) => [f.fileName, bytes(f.content), f.isText]),
      [
        ['a.txt', [104, 105], true],
        ['b.png', [0x89, 0x50, 0x4e, 0x47], false],
      ],
      'the Connect client gets the same files',
    );
  });

  t.test('both base64 and text', async (t) => {
    const message = await invalid(
      t,
      ResultKind.FILES,
      "return {files: [{fileName: 'a.txt', mimeType: 'text/plain', text: 'hi'}, {fileName: 'b.bin', mimeType: 'x/y', base64: 'AQID', text: 'x'}]}",
    );
    t.equal(message, 'files[1] must have only one of base64 and text');
  });

  t.test('neither base64 nor text', async (t) => {
    t.equal(await invalid(t, ResultKind.FILES, "return {files: {fileName: 'a.txt', mimeType: 'text/plain'}}"), 'files must have base64 or text content');
    t.equal(
      await invalid(t, ResultKind.FILES, "return [{mimeType: 'text/plain', text: 'x'}, {fileName: 'b', mimeType: '', base64: '!'}, 3]"),
      '4 problems: result[0].fileName must be a string, got nothing; result[1].mimeType must not be empty; result[1].base64 is not valid base64; ' +
        'result[2] must be a file object {fileName, mimeType, base64 | text}, got a number',
      'every file at fault, in one message',
    );
  });

  t.test('a fileName that is not a string', async (t) => {
    t.equal(
      await invalid(t, ResultKind.FILES, "return {files: {fileName: 5, mimeType: 'text/plain', text: 'x'}}"),
      'files.fileName must be a string, got a number',
    );
    t.equal(
      await invalid(t, ResultKind.FILES, "return {files: [{fileName: null, mimeType: 'text/plain', text: 'x'}]}"),
      'files[0].fileName must be a string, got null',
    );
  });

  t.test('invalid base64', async (t) => {
    t.equal(
      await invalid(t, ResultKind.FILES, "return {files: {fileName: 'a', mimeType: 'text/plain', base64: 'not base64!'}}"),
      'files.base64 is not valid base64',
    );
  });

  t.test('an empty list and a value that is not a file', async (t) => {
    t.equal(await invalid(t, ResultKind.FILES, 'return {files: []}'), 'files must hold at least one file');
    t.equal(await invalid(t, ResultKind.FILES, "return 'nope'"), 'result must be a file object {fileName, mimeType, base64 | text}, got a string');
  });
});

/** A valid native search item as guest source, with `extra` spread over it. */
const item = (extra = '') =>
  `{url: 'https://example.com/d/1', documentId: 'd1', title: 'Doc', mimeType: 'text/plain', ` +
  `lastSeenByUser: 0, createdDate: 0, lastModifiedByAnyone: 0${extra ? `, ${extra}` : ''}}`;

const EPOCH = '1970-01-01T00:00:00.000Z';
const normalisedItem = {
  url: 'https://example.com/d/1',
  documentId: 'd1',
  title: 'Doc',
  mimeType: 'text/plain',
  lastSeenByUser: EPOCH,
  createdDate: EPOCH,
  lastModifiedByAnyone: EPOCH,
};

t.test('RESULT_KIND_NATIVE_SEARCH', async (t) => {
  t.test('a complete item', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_SEARCH,
      `return [${item("author: {id: 'u1', name: 'Ann', imgUrl: 'https://example.com/a.png'}, lastModifiedByUserId: {id: 'u2', name: 'Bob', lastModifiedByUserIdDate: 0}, parent: {id: 'p1', title: 'Folder', url: 'https://example.com/p', type: 'folder', driveId: 'dr', siteId: 's', listId: 'l', listItemId: 'li'}")}]`,
    );
    t.same(json(res), [
      {
        ...normalisedItem,
        author: { id: 'u1', name: 'Ann', imgUrl: 'https://example.com/a.png' },
        lastModifiedByUserId: { id: 'u2', name: 'Bob', lastModifiedByUserIdDate: EPOCH },
        parent: { id: 'p1', title: 'Folder', url: 'https://example.com/p', type: 'folder', driveId: 'dr', siteId: 's', listId: 'l', listItemId: 'li' },
      },
    ]);
  });

  t.test('a missing required field', async (t) => {
    const message = await invalid(
      t,
      ResultKind.NATIVE_SEARCH,
      "return [{url: 'u', title: 'T', mimeType: 'm', lastSeenByUser: 0, createdDate: 0, lastModifiedByAnyone: 0}]",
    );
    t.match(message, /documentId/, 'the message names documentId');
    t.equal(message, 'result[0].documentId is required');
    t.equal(
      await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item()}, ${item('lastModifiedByAnyone: undefined')}]`),
      'result[1].lastModifiedByAnyone is required',
      'a missing date, in the second item',
    );
    t.equal(await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item("title: ''")}]`), 'result[0].title is required', 'an empty title');
    t.equal(await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item('url: 5')}]`), 'result[0].url must be a string, got a number');
  });

  t.test('every missing or wrong field, of every item, in one message', async (t) => {
    t.equal(
      await invalid(t, ResultKind.NATIVE_SEARCH, "return [{url: 'u', title: 5}, " + item() + ", {documentId: 'd'}]"),
      '12 problems: result[0].documentId is required; result[0].title must be a string, got a number; result[0].mimeType is required; ' +
        'result[0].lastSeenByUser is required; result[0].createdDate is required; result[0].lastModifiedByAnyone is required; ' +
        'result[2].url is required; result[2].title is required; result[2].mimeType is required; result[2].lastSeenByUser is required; ' +
        'result[2].createdDate is required; result[2].lastModifiedByAnyone is required',
    );
  });

  t.test('a result with thousands of faults lists 20 and counts the rest', async (t) => {
    const message = await invalid(t, ResultKind.NATIVE_SEARCH, 'return Array.from({length: 5000}, () => ({}))');
    t.match(message, /^35000 problems: result\[0\]\.url is required; /);
    t.equal(message?.split('; ').length, 21, '20 problems listed, then the count of the rest');
    t.match(message, /; and 34980 more$/);
  });

  t.test('optional attributes without a value are left out', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_SEARCH,
      `return [${item('author: null, lastModifiedByUserId: undefined, parent: ""')}, ${item("author: {id: 'u1', name: 'Ann', imgUrl: ''}, parent: {id: 'p1', title: '', url: null, type: undefined, driveId: 'dr'}")}]`,
    );
    t.same(json(res), [normalisedItem, { ...normalisedItem, author: { id: 'u1', name: 'Ann' }, parent: { id: 'p1', driveId: 'dr' } }]);
  });

  t.test('lastModifiedByUserId missing id, name or date is absent', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_SEARCH,
      'return [' +
        [
          item("lastModifiedByUserId: {name: 'Bob', lastModifiedByUserIdDate: 0}"),
          item("lastModifiedByUserId: {id: 'u2', lastModifiedByUserIdDate: 0}"),
          item("lastModifiedByUserId: {id: 'u2', name: 'Bob'}"),
          item("lastModifiedByUserId: {id: 'u2', name: '', lastModifiedByUserIdDate: 0}"),
          item("lastModifiedByUserId: {id: 'u2', name: 'Bob', lastModifiedByUserIdDate: '2024-03-04'}"),
        ].join(', ') +
        ']',
    );
    t.same(json(res), [
      normalisedItem,
      normalisedItem,
      normalisedItem,
      normalisedItem,
      { ...normalisedItem, lastModifiedByUserId: { id: 'u2', name: 'Bob', lastModifiedByUserIdDate: '2024-03-04T00:00:00.000Z' } },
    ]);
  });

  t.test('author present is kept', async (t) => {
    const res = await ok(t, ResultKind.NATIVE_SEARCH, `return [${item("author: {id: 'u1', name: 'Ann'}")}]`);
    t.same(json(res), [{ ...normalisedItem, author: { id: 'u1', name: 'Ann' } }]);
  });

  t.test('parent without id', async (t) => {
    const message = await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item("parent: {title: 'Folder'}")}]`);
    t.equal(message, 'result[0].parent.id is required when parent is given');
  });

  t.test('date values become ISO-8601 UTC', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_SEARCH,
      'return [' +
        [
          item("lastSeenByUser: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), createdDate: '2024-01-02T05:04:05+02:00', lastModifiedByAnyone: 0"),
          item("lastSeenByUser: '2024-01-02', createdDate: 1704164645000, lastModifiedByAnyone: '2024-01-02T03:04:05.123Z'"),
          item("lastSeenByUser: '2024-01-02T03:04:05', createdDate: '2024-01-01T22:04:05-05:00', lastModifiedByAnyone: '2024-01-02T03:04:05Z'"),
        ].join(', ') +
        ']',
    );
    const dates = (json(res) as { lastSeenByUser: string; createdDate: string; lastModifiedByAnyone: string }[] | undefined)?.map((i) => [
      i.lastSeenByUser,
      i.createdDate,
      i.lastModifiedByAnyone,
    ]);
    t.same(dates, [
      ['2024-01-02T03:04:05.000Z', '2024-01-02T03:04:05.000Z', '1970-01-01T00:00:00.000Z'],
      ['2024-01-02T00:00:00.000Z', '2024-01-02T03:04:05.000Z', '2024-01-02T03:04:05.123Z'],
      ['2024-01-02T03:04:05.000Z', '2024-01-02T03:04:05.000Z', '2024-01-02T03:04:05.000Z'],
    ]);
  });

  t.test('an invalid date string names the field', async (t) => {
    t.equal(
      await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item("createdDate: 'yesterday'")}]`),
      'result[0].createdDate must be an ISO-8601 date, a Date or epoch milliseconds, got "yesterday"',
    );
    t.equal(
      await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item("lastSeenByUser: '2024-13-01'")}]`),
      'result[0].lastSeenByUser is not a real calendar date: "2024-13-01"',
      'month 13',
    );
    t.match(await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item('lastModifiedByAnyone: {}')}]`), /^result\[0\]\.lastModifiedByAnyone /, 'an object');
    // 30 February does not exist: it must be refused, not silently moved to 1 March.
    t.match(
      await invalid(t, ResultKind.NATIVE_SEARCH, `return [${item("createdDate: '2024-02-30'")}]`),
      /^result\[0\]\.createdDate /,
      'a calendar date that does not exist (2024-02-30)',
    );
  });

  t.test('unknown fields are dropped', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_SEARCH,
      `return [${item("extra: 'x', nested: {a: 1}, author: {id: 'u1', name: 'Ann', email: 'a@x'}, parent: {id: 'p1', colour: 'red'}")}]`,
    );
    t.same(json(res), [{ ...normalisedItem, author: { id: 'u1', name: 'Ann' }, parent: { id: 'p1' } }]);
  });

  t.test('{items: [...]} and an empty list', async (t) => {
    t.same(json(await ok(t, ResultKind.NATIVE_SEARCH, `return {items: [${item()}]}`)), [normalisedItem]);
    t.same(json(await ok(t, ResultKind.NATIVE_SEARCH, 'return []')), []);
    t.equal(
      await invalid(t, ResultKind.NATIVE_SEARCH, `return ${item()}`),
      'result must be a list of search items, got an object',
      'a bare item is not a list',
    );
  });
});

t.test('RESULT_KIND_NATIVE_DOWNLOAD', async (t) => {
  t.test('an ArrayBuffer', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_DOWNLOAD,
      "return {fileName: 'a.bin', mimeType: 'application/octet-stream', buffer: new Uint8Array([1, 2, 3]).buffer}",
    );
    t.same(json(res), { fileName: 'a.bin', mimeType: 'application/octet-stream' }, 'result holds the name and type only');
    t.same(
      res.download && { fileName: res.download.fileName, mimeType: res.download.mimeType, content: bytes(res.download.content) },
      { fileName: 'a.bin', mimeType: 'application/octet-stream', content: [1, 2, 3] },
      'the bytes are in download.content',
    );
    t.same(res.files, [], 'no files');
  });

  t.test('a Uint8Array view delivers its own bytes only', async (t) => {
    const res = await ok(
      t,
      ResultKind.NATIVE_DOWNLOAD,
      "return {fileName: 'a.bin', mimeType: 'application/octet-stream', buffer: new Uint8Array([0, 1, 2, 3, 4]).subarray(1, 3)}",
    );
    t.same(bytes(res.download?.content), [1, 2]);
  });

  t.test('the Connect client gets the same bytes', async (t) => {
    const res = await runner.connect.execute({
      resultKind: ResultKind.NATIVE_DOWNLOAD,
      code: "return {fileName: 'a.bin', mimeType: 'application/pdf', buffer: new Uint8Array([1, 2, 3]).buffer}",
    });
    t.same([res.download?.fileName, res.download?.mimeType, bytes(res.download?.content)], ['a.bin', 'application/pdf', [1, 2, 3]]);
  });

  t.test('buffer as a string', async (t) => {
    const message = await invalid(t, ResultKind.NATIVE_DOWNLOAD, "return {fileName: 'a.bin', mimeType: 'application/octet-stream', buffer: 'AQID'}");
    t.match(message, /buffer/, 'the message mentions buffer');
    t.equal(message, 'buffer must be an ArrayBuffer or Uint8Array (the buffer of an ld.request response), got a string');
  });

  t.test('missing fileName', async (t) => {
    t.match(
      await invalid(t, ResultKind.NATIVE_DOWNLOAD, "return {mimeType: 'application/octet-stream', buffer: new ArrayBuffer(1)}"),
      /^fileName must be a string/,
    );
  });

  t.test('every field at fault in one message', async (t) => {
    t.equal(
      await invalid(t, ResultKind.NATIVE_DOWNLOAD, "return {mimeType: '', buffer: 'AQID'}"),
      '3 problems: fileName must be a string, got nothing; mimeType must not be empty; ' +
        'buffer must be an ArrayBuffer or Uint8Array (the buffer of an ld.request response), got a string',
    );
  });
});

t.test('RESULT_KIND_GENERIC delivers binary values as base64', async (t) => {
  const res = await ok(t, ResultKind.GENERIC, 'return {b: new Uint8Array([1, 2, 3]), a: new ArrayBuffer(2), n: [Buffer.from([255])]}');
  t.same(json(res), { b: 'AQID', a: 'AAA=', n: ['/w=='] });
  t.same([res.files, res.download], [[], undefined]);
});
