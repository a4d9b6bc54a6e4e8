/**
 * ld.csv2parquet (runner/builtins/formats/csv-to-parquet.ts), called directly: every codec read back
 * by DuckDB with the same rows and types (lists as LISTs), the type inference rules, the CSV dialect,
 * malformed CSV with exact messages, argument errors, the size cap, the deadline, and a type widened
 * by a later chunk.
 */
import t from 'tap';
import { csvToParquet, emptyStats } from '../../../runner/builtins/formats/csv-to-parquet.js';
import { FORMAT_LIMITS, FORMATS } from '../../../runner/builtins/formats/index.js';
import { COMPRESSIONS } from '../../../runner/builtins/formats/parquet-codecs.js';
import { csv2parquet, Duck, testContext, thrown } from './format-test-helpers.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const duck = await Duck.open();
t.teardown(() => duck.close());

/** Converts and returns the Parquet file's path; fails the test on `success: false`. */
function parquetFile(t: Test, csv: string | Uint8Array, options?: unknown): string {
  const r = options === undefined ? csv2parquet(csv) : csv2parquet(csv, options);
  t.equal(r.success, true, `converted${r.error ? `: ${r.error}` : ''}`);
  return duck.file(r.base64);
}

const MIXED = [
  'id,name,score,ok,tags,nums,floats,empty,when',
  '1,alice,1.5,true,"[""a"", ""x, y""]","[1, 2, 3]","[0.5, 2]",,2021-06-24',
  '2,"bo, ""b""",2,FALSE,[],[],[],,2021-06-25',
  '-3,"multi',
  'line",,True,"[""é"", null]","[9007199254740993, -9223372036854775808]","[1e-7]",,',
  '9223372036854775807,東京 😀,-0.25,false,,,,,2021-06-26',
].join('\n');

const MIXED_TYPES: [string, string][] = [
  ['id', 'BIGINT'],
  ['name', 'VARCHAR'],
  ['score', 'DOUBLE'],
  ['ok', 'BOOLEAN'],
  ['tags', 'VARCHAR[]'],
  ['nums', 'BIGINT[]'],
  ['floats', 'DOUBLE[]'],
  ['empty', 'VARCHAR'],
  ['when', 'DATE'],
];

const MIXED_ROWS = [
  ['1', 'alice', 1.5, true, ['a', 'x, y'], ['1', '2', '3'], [0.5, 2], null, '2021-06-24'],
  ['2', 'bo, "b"', 2, false, [], [], [], null, '2021-06-25'],
  ['-3', 'multi\nline', null, true, ['é', null], ['9007199254740993', '-9223372036854775808'], [1e-7], null, null],
  ['9223372036854775807', '東京 😀', -0.25, false, null, null, null, null, '2021-06-26'],
];

const CODEC_NAMES: Record<string, string> = {
  uncompressed: 'UNCOMPRESSED',
  snappy: 'SNAPPY',
  gzip: 'GZIP',
  brotli: 'BROTLI',
  lz4: 'LZ4_RAW',
  zstd: 'ZSTD',
};

t.test('every codec: DuckDB reads the same rows, types and codec back', async (t) => {
  for (const compression of COMPRESSIONS) {
    const path = parquetFile(t, MIXED, { compression });
    t.same(await duck.describe(path), MIXED_TYPES, `${compression}: column types`);
    t.same(await duck.rows(`SELECT * FROM read_parquet('${path}')`), MIXED_ROWS, `${compression}: rows`);
    t.same(
      await duck.rows(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`),
      [[CODEC_NAMES[compression]]],
      `${compression}: written as ${CODEC_NAMES[compression]}`,
    );
  }
  const path = parquetFile(t, MIXED);
  t.same(await duck.rows(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`), [['ZSTD']], 'zstd is the default');
});

t.test('compression names: any case, lz4_raw as an alias, unknown names refused', async (t) => {
  for (const [given, codec] of [
    ['ZSTD', 'ZSTD'],
    ['Snappy', 'SNAPPY'],
    ['lz4_raw', 'LZ4_RAW'],
    [undefined, 'ZSTD'],
  ] as const) {
    const path = parquetFile(t, 'a\n1', { compression: given });
    t.same(await duck.rows(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`), [[codec]], String(given));
  }
  t.same(parquetFile(t, 'a\n1', null).endsWith('.parquet'), true, 'options null is the default');
  t.same(
    thrown(() => csv2parquet('a\n1', { compression: 'lzo' })),
    ['RangeError', 'ld.csv2parquet: unknown compression "lzo"; use one of uncompressed, snappy, gzip, brotli, lz4, zstd'],
  );
  t.same(
    thrown(() => csv2parquet('a\n1', { compression: 5 })),
    ['TypeError', 'ld.csv2parquet: options.compression must be a string, got a number'],
  );
  t.same(
    thrown(() => csv2parquet('a\n1', 'zstd')),
    ['TypeError', "ld.csv2parquet: options must be an object like {compression: 'zstd'}, got a string"],
  );
});

t.test('type inference per column', async (t) => {
  const cases: [string, string[], string][] = [
    ['integers and nulls', ['1', '-2', ''], 'BIGINT'],
    ['int64 bounds', ['9223372036854775807', '-9223372036854775808'], 'BIGINT'],
    ['beyond int64 stays text', ['9223372036854775808', '1'], 'VARCHAR'],
    ['leading zero stays text', ['007', '1'], 'VARCHAR'],
    ['a plus sign stays text', ['+5'], 'VARCHAR'],
    ['padded number stays text', [' 5'], 'VARCHAR'],
    ['ints and floats', ['1', '2.5'], 'DOUBLE'],
    ['exponent', ['1e3', '-2.5E-3'], 'DOUBLE'],
    ['NaN and Infinity', ['NaN', 'Infinity', '-Infinity', '1.5'], 'DOUBLE'],
    ['.5 stays text', ['.5'], 'VARCHAR'],
    ['booleans in any case', ['true', 'FALSE', 'True', ''], 'BOOLEAN'],
    ['booleans and numbers', ['true', '1'], 'VARCHAR'],
    ['dates', ['2021-01-01', '2021-01-02', ''], 'DATE'],
    ['date-times', ['2021-01-01T00:00:00', '2021-01-02 12:00'], 'TIMESTAMP'],
    ['date-times with a zone', ['2021-01-01T00:00:00Z', '2021-01-02 12:00:00+02'], 'TIMESTAMP WITH TIME ZONE'],
    ['date-times with 9 fraction digits', ['2021-01-01T00:00:00.123456789', '2021-01-02T00:00:00'], 'TIMESTAMP_NS'],
    ['dates and date-times: text', ['2021-01-01', '2021-01-02T00:00:00'], 'VARCHAR'],
    ['not a calendar date: text', ['2021-01-01', '2021-02-29'], 'VARCHAR'],
    ['only empty cells', ['', ''], 'VARCHAR'],
    ['quoted empty is null too', ['""', '1'], 'BIGINT'],
    ['quoted numbers are numbers', ['"12"', '3'], 'BIGINT'],
    ['list of ints', ['"[1, 2]"', '[]', ''], 'BIGINT[]'],
    ['list of ints and floats', ['"[1, 2.5]"', '[3]'], 'DOUBLE[]'],
    ['list of strings', ['"[""a"", ""b""]"', '[null]'], 'VARCHAR[]'],
    ['list of booleans', ['"[true, false]"'], 'BOOLEAN[]'],
    ['only empty lists', ['[]', '[ ]'], 'VARCHAR[]'],
    ['mixed items: text', ['"[1, ""a""]"'], 'VARCHAR'],
    ['a list and a scalar: text', ['[1]', '3'], 'VARCHAR'],
    ['nested lists: text', ['[[1]]'], 'VARCHAR'],
    ['bare words: text', ['"[a, b]"'], 'VARCHAR'],
    ['trailing comma: text', ['"[1,]"'], 'VARCHAR'],
    ['ints and int lists: text', ['"[1, 2]"', '"[""a""]"'], 'VARCHAR'],
  ];
  for (const [name, cells, type] of cases) {
    const path = parquetFile(t, `v\n${cells.join('\n')}\n`);
    t.same(await duck.describe(path), [['v', type]], name);
  }
});

t.test('values are exact', async (t) => {
  const path = parquetFile(t, 'i,f,big\n9007199254740993,0.1,123456789012345678.5\n-9007199254740993,1e-7,1e308\n0,-0.0,5e-324\n');
  t.same(await duck.rows(`SELECT i::VARCHAR, f, big FROM read_parquet('${path}')`), [
    // biome-ignore lint/correctness/noPrecisionLoss: the literal is the CSV text; both round to the same double
    ['9007199254740993', 0.1, 123456789012345678.5],
    ['-9007199254740993', 1e-7, 1e308],
    ['0', -0, 5e-324],
  ]);
  const lists = parquetFile(t, 'l\n"[9223372036854775807, -1, 0]"\n"[""a\\""b"", ""\\u00e9\\n""]"\n');
  t.same(await duck.describe(lists), [['l', 'VARCHAR']], 'ints and strings in one list column: text');
  const strs = parquetFile(t, 'l\n"[""a\\""b"", ""\\u00e9\\n"", """"]"\n');
  t.same(await duck.rows(`SELECT l FROM read_parquet('${strs}')`), [[['a"b', 'é\n', '']]], 'JSON escapes in list strings are decoded');
});

t.test('the CSV dialect', async (t) => {
  const read = async (csv: string) => duck.rows(`SELECT * FROM read_parquet('${parquetFile(t, csv)}')`);
  t.same(
    await read('a,b\r\n1,x\r\n2,y\r\n'),
    [
      ['1', 'x'],
      ['2', 'y'],
    ],
    'CRLF',
  );
  t.same(
    await read('a,b\r1,x\r2,y'),
    [
      ['1', 'x'],
      ['2', 'y'],
    ],
    'lone CR',
  );
  t.same(await read('\ufeffa,b\n1,x'), [['1', 'x']], 'a BOM is skipped');
  t.same(
    await duck.describe(parquetFile(t, '\ufeffa,b\n1,x')),
    [
      ['a', 'BIGINT'],
      ['b', 'VARCHAR'],
    ],
    'and not part of the first name',
  );
  t.same(
    await read('\n\na,b\n\n1,x\n\n\n2,y\n\n'),
    [
      ['1', 'x'],
      ['2', 'y'],
    ],
    'blank lines are skipped',
  );
  t.same(await read('a,b\n1,"x\r\ny"\n'), [['1', 'x\r\ny']], 'line breaks inside quotes are kept');
  t.same(await read('a,b\n1,"say ""hi"""\n'), [['1', 'say "hi"']], 'doubled quotes');
  t.same(await read('a,b\n1,x"y\n'), [['1', 'x"y']], 'a quote inside an unquoted field is literal');
  t.same(await read('a,b\n1,\n'), [['1', null]], 'a trailing empty field');
  t.same(await read('a,b\n1,""\n'), [['1', null]], 'a quoted empty field is null');
  t.same(await read('a,b\n1, x \n'), [['1', ' x ']], 'spaces are kept');
  const header = parquetFile(t, '"x,1",,a,a,,a_1\n1,2,3,4,5,6');
  t.same(
    (await duck.describe(header)).map((c) => c[0]),
    ['x,1', 'column1', 'a', 'a_2', 'column4', 'a_1'],
    'empty names become column<i>, repeated names get a suffix',
  );
  const only = parquetFile(t, 'a,b\n');
  t.same(
    await duck.describe(only),
    [
      ['a', 'VARCHAR'],
      ['b', 'VARCHAR'],
    ],
    'a header alone: string columns',
  );
  t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet('${only}')`), [[0]], 'and no rows');
  const bytes = parquetFile(t, new TextEncoder().encode('a,b\n1,é'));
  t.same(await duck.rows(`SELECT * FROM read_parquet('${bytes}')`), [['1', 'é']], 'UTF-8 bytes are accepted as csvText');
});

t.test('malformed CSV: success false with a message that says where', async (t) => {
  const cases: [string, string, string][] = [
    ['unclosed quote', 'a,b\n1,x\n2,"never closed\n3,z\n', 'malformed CSV: a quoted field is never closed (its opening quote is on line 3)'],
    ['unclosed quote in the header', 'a,"b\n1,2', 'malformed CSV: a quoted field is never closed (its opening quote is on line 1)'],
    [
      'too few fields',
      'a,b\n1,x\n2\n',
      'malformed CSV: line 3 has 1 field, but the header has 2 (pass { padShortRows: true } to read missing fields as nulls)',
    ],
    ['too many fields', 'a,b\n1,x,extra\n', "malformed CSV: line 2 has more fields than the header's 2"],
    ['ragged after a multi-line field', 'a,b\n1,"x\ny"\n2,y,z\n', "malformed CSV: line 4 has more fields than the header's 2"],
    [
      'text after a closing quote',
      'a,b\n1,"x"y\n',
      'malformed CSV: unexpected character after a closing quote on line 2 (a quote inside a quoted field must be doubled)',
    ],
    ['empty text', '', 'the CSV is empty: it needs at least a header row'],
    ['only line breaks', '\n\r\n\n', 'the CSV is empty: it needs at least a header row'],
  ];
  for (const [name, csv, error] of cases) t.same(csv2parquet(csv), { base64: '', success: false, error }, name);
});

t.test('wrong arguments throw a TypeError', async (t) => {
  t.same(
    thrown(() => csv2parquet()),
    ['TypeError', 'ld.csv2parquet(csvText, options?) takes the CSV as a string, got undefined'],
  );
  t.same(
    thrown(() => csv2parquet(12)),
    ['TypeError', 'ld.csv2parquet(csvText, options?) takes the CSV as a string, got a number'],
  );
  t.same(
    thrown(() => csv2parquet(null)),
    ['TypeError', 'ld.csv2parquet(csvText, options?) takes the CSV as a string, got null'],
  );
  t.same(
    thrown(() => csv2parquet(['a'])),
    ['TypeError', 'ld.csv2parquet(csvText, options?) takes the CSV as a string, got an array'],
  );
});

t.test('a CSV over the size cap is refused before any work', async (t) => {
  const huge = 'a'.repeat(FORMAT_LIMITS.maxCsvChars + 1);
  const started = performance.now();
  t.same(csv2parquet(huge), { base64: '', success: false, error: 'the CSV is 256.0 MiB, over the limit of 256 MiB' });
  t.ok(performance.now() - started < 1000, 'at once');
});

t.test('a deadline that passes mid-conversion stops it at the next chunk', async (t) => {
  const csv = `a,b,c\n${'123456,1.25,"[1, 2]"\n'.repeat(600_000)}`;
  let started = performance.now();
  t.equal((FORMATS.sync!.csv2parquet!([csv], testContext()) as { success: boolean }).success, true);
  const full = performance.now() - started;
  started = performance.now();
  t.same(
    thrown(() => FORMATS.sync!.csv2parquet!([csv], testContext(1))),
    ['Error', "the conversion ran past the call's time limit"],
  );
  const stopped = performance.now() - started;
  t.ok(stopped < full / 2, `stopped after ${Math.round(stopped)} ms, a full run takes ${Math.round(full)} ms`);
});

t.test('the call deadline and cancellation stop a conversion', async (t) => {
  const csv = `a,b\n${'1,x\n'.repeat(1000)}`;
  t.same(
    thrown(() => FORMATS.sync!.csv2parquet!([csv], testContext(-1))),
    ['Error', "the conversion ran past the call's time limit"],
  );
  const ac = new AbortController();
  ac.abort();
  t.same(
    thrown(() => FORMATS.sync!.csv2parquet!([csv], testContext(60_000, ac.signal))),
    ['Error', 'the call was cancelled during the conversion'],
  );
});

t.test('a type widened by a later chunk: one restart, the final types, every value', async (t) => {
  const rows = 70_000;
  const lines = ['n,x,y,z,w'];
  for (let i = 0; i < rows; i++) {
    const x = i === 69_000 ? 'oops' : String(i);
    const y = i < 68_000 ? '' : (i / 4).toString();
    const z = i === 66_000 ? '0.5' : String(i);
    const w = i === 67_000 ? '"[1.5]"' : `"[${i}]"`;
    lines.push(`${i},${x},${y},${z},${w}`);
  }
  const stats = emptyStats();
  const bytes = csvToParquet(lines.join('\n'), 'snappy', testContext(), stats);
  t.equal(stats.restarts, 1, 'restarted once');
  t.same(stats.types, ['int64', 'string', 'float64', 'float64', 'list<float64>']);
  const path = duck.file(bytes);
  t.same(await duck.describe(path), [
    ['n', 'BIGINT'],
    ['x', 'VARCHAR'],
    ['y', 'DOUBLE'],
    ['z', 'DOUBLE'],
    ['w', 'DOUBLE[]'],
  ]);
  t.same(
    await duck.rows(
      `SELECT count(*)::INT, count(y)::INT, sum(z)::DOUBLE, sum(w[1])::DOUBLE, max(x) FILTER (WHERE n = 69000), max(x) FILTER (WHERE n = 5) FROM read_parquet('${path}')`,
    ),
    [[rows, 2000, (rows * (rows - 1)) / 2 - 66_000 + 0.5, (rows * (rows - 1)) / 2 - 67_000 + 1.5, 'oops', '5']],
  );
  t.ok(stats.chunks >= 2, `${stats.chunks} chunks`);
});

t.test('chunks read a block of rows at a time: boundaries, blank lines, multi-line cells, late errors', async (t) => {
  const rows = 2 * 16_384 + 2049 + 5;
  const lines = ['id,text,n'];
  for (let i = 0; i < rows; i++) {
    if (i % 1000 === 999) lines.push('');
    lines.push(`${i},${i % 777 === 0 ? `"line one\nline ${i}, two"` : `t${i}`},${i % 3 === 0 ? '' : i * 2}`);
  }
  const path = parquetFile(t, lines.join('\r\n'));
  t.same(await duck.rows(`SELECT row_group_num_rows::INT FROM parquet_metadata('${path}') GROUP BY row_group_id, row_group_num_rows ORDER BY row_group_id`), [
    [16_384],
    [16_384],
    [2049 + 5],
  ]);
  t.same(
    await duck.rows(
      `SELECT count(*)::INT, sum(id)::BIGINT::VARCHAR, count(n)::INT, count(*) FILTER (WHERE text LIKE 'line one%')::INT FROM read_parquet('${path}')`,
    ),
    [[rows, String((rows * (rows - 1)) / 2), rows - Math.ceil(rows / 3), Math.ceil(rows / 777)]],
  );
  t.same(await duck.rows(`SELECT text FROM read_parquet('${path}') WHERE id = 33411`), [['line one\nline 33411, two']]);
  // Errors deep in a later chunk still name their line.
  const before = lines.slice(0, 30_000).join('\n');
  const line = before.split('\n').length + 1;
  t.ok(line > 30_000, `line ${line}, in the second chunk`);
  const ragged = `${before}\n1,2\n${lines.slice(30_000).join('\n')}`;
  t.same(csv2parquet(ragged), {
    base64: '',
    success: false,
    error: `malformed CSV: line ${line} has 2 fields, but the header has 3 (pass { padShortRows: true } to read missing fields as nulls)`,
  });
  const unclosed = `${before}\n5,"open,1\n${lines.slice(30_000).join('\n')}`;
  t.match(csv2parquet(unclosed).error, /^malformed CSV: /, 'an unclosed quote far down');
});

t.test('one row group per chunk of 16,384 rows', async (t) => {
  const csv = `a\n${Array.from({ length: 250_000 }, (_, i) => i).join('\n')}`;
  const path = parquetFile(t, csv);
  t.same(await duck.rows(`SELECT row_group_id::INT, row_group_num_rows::INT FROM parquet_metadata('${path}') ORDER BY 1`), [
    ...Array.from({ length: 15 }, (_, i) => [i, 16_384]),
    [15, 250_000 - 15 * 16_384],
  ]);
  t.same(await duck.rows(`SELECT count(*)::INT, sum(a)::BIGINT::VARCHAR FROM read_parquet('${path}')`), [[250_000, String((250_000 * 249_999) / 2)]]);
});
