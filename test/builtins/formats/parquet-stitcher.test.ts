/**
 * ParquetStitcher (runner/builtins/formats/parquet-stitcher.ts): files written chunk by chunk by
 * parquet-wasm and joined into one must be a valid Parquet file. DuckDB reads the joined file (rows,
 * types, row groups, codecs), and its metadata is checked structurally: every offset points inside
 * the file, and every offset index starts at its column chunk's first data page.
 */
import t from 'tap';
import { tableFromArrays, tableToIPC, vectorFromArray, List, Field, Utf8, Table } from 'apache-arrow';
import { ParquetStitcher } from '../../../runner/builtins/formats/parquet-stitcher.js';
import { writeParquetFromIpc } from '../../../runner/builtins/formats/parquet-writer.js';
import { field, intOf, readStruct, structListOf, structOf } from '../../../runner/builtins/formats/thrift-compact.js';
import { COMPRESSIONS } from '../../../runner/builtins/formats/parquet-codecs.js';
import { Duck } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

function chunk(from: number, rows: number): Uint8Array {
  const ids = Array.from({ length: rows }, (_, i) => from + i);
  const table = new Table({
    id: vectorFromArray(ids.map((i) => BigInt(i))),
    name: vectorFromArray(
      ids.map((i) => (i % 7 === 0 ? null : `name ${i % 100}`)),
      new Utf8(),
    ),
    tags: vectorFromArray(
      ids.map((i) => ['t' + (i % 3), 'x, y']),
      new List(new Field('item', new Utf8(), true)),
    ),
    half: tableFromArrays({ h: Float64Array.from(ids, (i) => i / 2) }).getChild('h')!,
  });
  return tableToIPC(table, 'stream');
}

/** Every column chunk: [data_page_offset, dictionary_page_offset, first offset-index page, page index spans]. */
function inspect(file: Uint8Array) {
  const n = file.length;
  const len = new DataView(file.buffer, file.byteOffset).getUint32(n - 8, true);
  const meta = readStruct(file, n - 8 - len, n - 8).fields;
  const out: { data: number; dict?: number; firstPage?: number; size: number; inside: boolean }[] = [];
  for (const rg of structListOf(field(meta, 4)!)) {
    for (const cc of structListOf(field(rg, 1)!)) {
      const md = structOf(field(cc, 3)!);
      const data = intOf(field(md, 9)!);
      const dictF = field(md, 11);
      const size = intOf(field(md, 7)!);
      const oiAt = field(cc, 4);
      const oiLen = field(cc, 5);
      let firstPage: number | undefined;
      let inside = (dictF ? intOf(dictF) : data) + size <= n - 8 - len;
      if (oiAt && oiLen) {
        const at = intOf(oiAt);
        const oi = readStruct(file, at, at + intOf(oiLen)).fields;
        const pages = structListOf(field(oi, 1)!);
        firstPage = intOf(field(pages[0]!, 1)!);
        inside &&= at + intOf(oiLen) <= n - 8 - len;
      }
      const ciAt = field(cc, 6);
      const ciLen = field(cc, 7);
      if (ciAt && ciLen) inside &&= intOf(ciAt) + intOf(ciLen) <= n - 8 - len;
      out.push({ data, ...(dictF ? { dict: intOf(dictF) } : {}), firstPage, size, inside });
    }
  }
  return { rows: intOf(field(meta, 3)!), groups: structListOf(field(meta, 4)!).length, chunks: out };
}

t.test('joined files read back in DuckDB, with consistent metadata, for every codec', async (t) => {
  for (const compression of COMPRESSIONS) {
    const s = new ParquetStitcher(1024);
    const sizes = [1000, 5, 2500];
    let from = 0;
    for (const rows of sizes) {
      s.add(writeParquetFromIpc(chunk(from, rows), compression));
      from += rows;
    }
    const file = s.finish();
    const info = inspect(file);
    t.equal(info.rows, 3505, `${compression}: num_rows summed`);
    t.equal(info.groups, 3, `${compression}: three row groups`);
    t.ok(
      info.chunks.every((c) => c.inside),
      `${compression}: every offset inside the data`,
    );
    t.ok(
      info.chunks.every((c) => c.firstPage === undefined || c.firstPage === c.data),
      `${compression}: each offset index starts at its first data page`,
    );
    t.ok(
      info.chunks.some((c) => c.firstPage !== undefined),
      `${compression}: offset indexes were carried over`,
    );
    const path = duck.file(file);
    t.same(await duck.describe(path), [
      ['id', 'BIGINT'],
      ['name', 'VARCHAR'],
      ['tags', 'VARCHAR[]'],
      ['half', 'DOUBLE'],
    ]);
    t.same(
      await duck.rows(
        `SELECT count(*)::INT, sum(id)::BIGINT::VARCHAR, count(name)::INT, sum(len(tags))::INT, sum(half)::DOUBLE, max(id) FILTER (WHERE tags[1] = 't2')::VARCHAR FROM read_parquet('${path}')`,
      ),
      [[3505, String((3505 * 3504) / 2), 3505 - 501, 7010, (3505 * 3504) / 4, '3503']],
      `${compression}: every value`,
    );
    t.same(await duck.rows(`SELECT row_group_id::INT, row_group_num_rows::INT FROM parquet_metadata('${path}') GROUP BY ALL ORDER BY 1`), [
      [0, 1000],
      [1, 5],
      [2, 2500],
    ]);
    t.same(
      await duck.rows(`SELECT id::VARCHAR, name FROM read_parquet('${path}') WHERE id BETWEEN 998 AND 1006 ORDER BY id`),
      [
        ['998', 'name 98'],
        ['999', 'name 99'],
        ['1000', 'name 0'],
        ['1001', null],
        ['1002', 'name 2'],
        ['1003', 'name 3'],
        ['1004', 'name 4'],
        ['1005', 'name 5'],
        ['1006', 'name 6'],
      ],
      `${compression}: a filtered read across a row group boundary`,
    );
  }
});

t.test('a single file passes through with the same content', async (t) => {
  const one = writeParquetFromIpc(chunk(0, 10), 'snappy');
  const s = new ParquetStitcher(16);
  s.add(one);
  const joined = s.finish();
  const a = duck.file(one);
  const b = duck.file(joined);
  t.same(await duck.rows(`SELECT * FROM read_parquet('${b}')`), await duck.rows(`SELECT * FROM read_parquet('${a}')`));
  t.same(
    inspect(joined).chunks.map((c) => c.size),
    inspect(one).chunks.map((c) => c.size),
    'same column chunk sizes',
  );
});

t.test('the joined file keeps nothing of the files added (they may be freed or reused)', async (t) => {
  const files = [0, 1, 2].map((k) => writeParquetFromIpc(chunk(k * 50, 50), 'zstd'));
  const joinedOf = (overwrite: boolean) => {
    const s = new ParquetStitcher(16);
    for (const f of files.map((f) => Uint8Array.from(f))) {
      s.add(f);
      if (overwrite) f.fill(0x5a);
    }
    return Buffer.from(s.finish());
  };
  t.ok(joinedOf(true).equals(joinedOf(false)), 'the same bytes when each file is overwritten after add()');
});

t.test('cutting a DuckDB file down to some row groups', async (t) => {
  const src = duck.path();
  await duck.run(
    `COPY (SELECT i AS id, 'v' || i AS s, [i, i + 1] AS l, i % 2 = 0 AS b FROM range(10000) t(i)) TO '${src}' (FORMAT PARQUET, ROW_GROUP_SIZE 2048)`,
  );
  const file = duck.read(src);
  const groups = (await duck.rows(`SELECT DISTINCT row_group_id::INT, row_group_num_rows::INT FROM parquet_metadata('${src}') ORDER BY 1`)) as [
    number,
    number,
  ][];
  t.ok(groups.length >= 4, `${groups.length} row groups`);
  const s = new ParquetStitcher(16);
  s.add(file, [1, 3]);
  const cut = duck.file(s.finish());
  const firstOf = (g: number) => groups.slice(0, g).reduce((n, [, rows]) => n + rows, 0);
  const expected = [...[1, 3].flatMap((g) => Array.from({ length: groups[g]![1] }, (_, k) => firstOf(g) + k))];
  t.same(
    await duck.rows(`SELECT list(id ORDER BY id)::VARCHAR FROM read_parquet('${cut}')`),
    [[`[${expected.join(', ')}]`]],
    'exactly the rows of row groups 1 and 3',
  );
  t.same(
    await duck.rows(`SELECT count(*)::INT FROM read_parquet('${cut}') WHERE s = 'v' || id AND l[2] = id + 1 AND b = (id % 2 = 0)`),
    [[expected.length]],
    'every column intact',
  );
  const none = new ParquetStitcher(16);
  none.add(file, []);
  const empty = duck.file(none.finish());
  t.same(await duck.describe(empty), await duck.describe(src), 'no row groups: the schema alone');
});
