/**
 * ld.json2csv (runner/builtins/formats/json-to-csv.ts), called directly: the header is the union of
 * keys in first-seen order, nested values are JSON, quoting is minimal and exact, the output parses
 * back with csv-parse (an independent reader) and through csv2parquet; wrong input throws.
 */
import { parse } from 'csv-parse/sync';
import t from 'tap';
import { FORMATS } from '../../../runner/builtins/formats/index.js';
import { csv2parquet, Duck, json2csv, testContext, thrown } from './format-test-helpers.js';

t.test('header: the union of keys in first-seen order', async (t) => {
  t.equal(
    json2csv([
      { b: 1, a: 2 },
      { c: 3, a: 4 },
      { d: 5, b: 6 },
    ]),
    'b,a,c,d\n1,2,,\n,4,3,\n6,,,5\n',
  );
  t.equal(json2csv([{ x: 1 }, {}, { y: 2 }]), 'x,y\n1,\n,\n,2\n', 'an object without keys is a row of empty cells');
});

t.test('cells', async (t) => {
  t.equal(
    json2csv([
      {
        s: 'plain',
        comma: 'a,b',
        quote: 'say "hi"',
        nl: 'line\nbreak',
        empty: '',
        n: 1.5,
        neg: -0,
        big: 1e21,
        nan: NaN,
        inf: -Infinity,
        t: true,
        f: false,
        nil: null,
        undef: undefined,
        obj: { a: 1, b: [1, 'x'] },
        arr: [1, 2],
        bin: new Uint8Array([0xde, 0xad]),
        nested: { data: new Uint8Array([1]) },
        uni: 'é東京😀',
      },
    ]),
    's,comma,quote,nl,empty,n,neg,big,nan,inf,t,f,nil,undef,obj,arr,bin,nested,uni\n' +
      'plain,"a,b","say ""hi""","line\nbreak","",1.5,0,1e+21,NaN,-Infinity,true,false,,,"{""a"":1,""b"":[1,""x""]}","[1,2]",3q0=,"{""data"":""AQ==""}",é東京😀\n',
  );
  t.equal(json2csv([{ 'a,b': 1, 'q"': 2, '': 3 }]), '"a,b","q""",""\n1,2,3\n', 'header names are quoted like cells');
  t.equal(json2csv([]), '', 'an empty array: an empty string');
  t.equal(json2csv([{}, {}]), '', 'no keys at all: an empty string');
});

t.test('csv-parse reads back exactly the cells', async (t) => {
  const rows = Array.from({ length: 200 }, (_, i) => ({
    id: i,
    text: ['a', 'b,c', '"q"', 'x\r\ny', ' pad ', 'é'][i % 6]!,
    ...(i % 3 === 0 ? { extra: { i, tags: ['t', String(i)] } } : {}),
    flag: i % 2 === 0,
  }));
  const records = parse(json2csv(rows), { columns: true }) as Record<string, string>[];
  t.same(Object.keys(records[0]!), ['id', 'text', 'extra', 'flag']);
  t.same(
    records,
    rows.map((r) => ({ id: String(r.id), text: r.text, extra: 'extra' in r ? JSON.stringify(r.extra) : '', flag: String(r.flag) })),
  );
});

t.test('json2csv → csv2parquet: typed columns in DuckDB', async (t) => {
  const duck = await Duck.open();
  t.teardown(() => duck.close());
  const csv = json2csv([
    { id: 1, name: 'a, b', score: 1.5, ok: true, tags: ['x', 'y, z'], nums: [1, 2] },
    { id: 2, name: null, score: 2, ok: false, tags: [], nums: [] },
  ]);
  const r = csv2parquet(csv);
  const path = duck.file(r.base64);
  t.same(await duck.describe(path), [
    ['id', 'BIGINT'],
    ['name', 'VARCHAR'],
    ['score', 'DOUBLE'],
    ['ok', 'BOOLEAN'],
    ['tags', 'VARCHAR[]'],
    ['nums', 'BIGINT[]'],
  ]);
  t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), [
    ['1', 'a, b', 1.5, true, ['x', 'y, z'], ['1', '2']],
    ['2', null, 2, false, [], []],
  ]);
});

t.test('wrong input throws a TypeError that names the item', async (t) => {
  t.same(
    thrown(() => json2csv()),
    ['TypeError', 'ld.json2csv(jsonData) takes an array of objects, got undefined'],
  );
  t.same(
    thrown(() => json2csv({ a: 1 })),
    ['TypeError', 'ld.json2csv(jsonData) takes an array of objects, got an object'],
  );
  t.same(
    thrown(() => json2csv('a,b')),
    ['TypeError', 'ld.json2csv(jsonData) takes an array of objects, got a string'],
  );
  t.same(
    thrown(() => json2csv([{ a: 1 }, null])),
    ['TypeError', 'ld.json2csv: item 1 of the array is null, not an object'],
  );
  t.same(
    thrown(() => json2csv([{ a: 1 }, { b: 2 }, [1, 2]])),
    ['TypeError', 'ld.json2csv: item 2 of the array is an array, not an object'],
  );
  t.same(
    thrown(() => json2csv([5])),
    ['TypeError', 'ld.json2csv: item 0 of the array is a number, not an object'],
  );
  const many = Array.from({ length: 5000 }, (_, i) => ({ i }));
  t.same(
    thrown(() => FORMATS.sync!.json2csv!([many], testContext(-1))),
    ['Error', "the conversion ran past the call's time limit"],
  );
});
