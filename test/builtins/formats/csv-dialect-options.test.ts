/**
 * ld.csv2parquet's dialect options (runner/builtins/formats/csv-dialect.ts): `delimiter`, `comment`,
 * `padShortRows`, on the real-world-shaped files of test/fixtures/csv (read back by DuckDB, and
 * compared with DuckDB's own CSV reader given the same options), the rules at the edges, the
 * one-column header that holds another delimiter, and every wrong, oversized or hostile option value
 * with its exact error.
 */
import t, { type Test } from 'tap';
import { MAX_COMMENT_CHARS } from '../../../runner/builtins/formats/csv-dialect.js';
import { csv2parquet, csvOf, Duck, fixtureFolder, parquet2csv, thrown } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

const { text: fixture, path: fixturePath } = fixtureFolder(new URL('../../../../test/fixtures/csv/', import.meta.url));

/** Converts and returns the Parquet file's path; fails the test on `success: false` (the path then names an empty file). */
const parquetFile = (t: Test, csv: string, options?: unknown): string => duck.parquetOf(t, csv, options) ?? duck.file(new Uint8Array());

const rowsOf = (path: string) => duck.rows(`SELECT * FROM read_parquet('${path}')`);
const failure = (error: string) => ({ base64: '', success: false, error });

t.test('weather-stations.tsv: tab, # comments before the header and between rows, short rows padded', async (t) => {
  const path = parquetFile(t, fixture('weather-stations.tsv'), { delimiter: '\t', comment: '#', padShortRows: true });
  t.same(await duck.describe(path), [
    ['station_id', 'VARCHAR'],
    ['name', 'VARCHAR'],
    ['latitude', 'DOUBLE'],
    ['longitude', 'DOUBLE'],
    ['elevation_m', 'BIGINT'],
    ['active', 'BOOLEAN'],
    ['opened', 'DATE'],
    ['precip_mm', 'DOUBLE'],
    ['remarks', 'VARCHAR'],
  ]);
  t.same(await rowsOf(path), [
    ['GHCN-0042', 'Oslo - Blindern', 59.9423, 10.72, '94', true, '1937-01-01', 0, null],
    ['GHCN-0108', 'Bergen, Florida', 60.3833, 5.3333, '12', true, '1904-06-15', 12.5, 'gauge "B" replaced'],
    ['GHCN-0311', 'Tromsø', 69.6537, 18.9368, '100', false, '1920-09-01', null, null],
    ['GHCN-0512', 'Kautokeino', 69, 23, '307', true, '1996-01-01', 3, 'snow; wind\ndrift'],
    ['GHCN-0777', 'Svalbard Lufthavn', 78.2453, 15.5015, '28', true, '1975-10-01', 1, null],
  ]);
  // DuckDB's own reader with the same dialect sees the same cells (compared as text).
  const duckCsv = `read_csv('${fixturePath('weather-stations.tsv')}', delim='\t', comment='#', null_padding=true, header=true, all_varchar=true)`;
  const ours = `SELECT COLUMNS(*)::VARCHAR FROM read_parquet('${path}')`;
  t.same(await duck.rows(`SELECT count(*)::INT FROM ((${ours}) EXCEPT ALL (SELECT * FROM ${duckCsv}))`), [[0]], 'nothing only in ours');
  t.same(await duck.rows(`SELECT count(*)::INT FROM ((SELECT * FROM ${duckCsv}) EXCEPT ALL (${ours}))`), [[0]], "nothing only in DuckDB's");
  t.same(await duck.rows(`SELECT count(*)::INT FROM ${duckCsv}`), [[5]], 'five stations');
});

t.test('orders-eu.csv: semicolons, CRLF, a quoted ;, a short row; decimal commas stay text', async (t) => {
  const path = parquetFile(t, fixture('orders-eu.csv'), { delimiter: ';', padShortRows: true });
  t.same(await duck.describe(path), [
    ['order_id', 'BIGINT'],
    ['customer', 'VARCHAR'],
    ['city', 'VARCHAR'],
    ['amount_eur', 'VARCHAR'],
    ['quantity', 'BIGINT'],
    ['paid', 'BOOLEAN'],
    ['ordered_at', 'TIMESTAMP'],
    ['note', 'VARCHAR'],
  ]);
  t.same(await rowsOf(path), [
    ['100231', 'Müller GmbH', 'München', '1.249,90', '3', true, '2024-02-11 09:14:00', null],
    ['100232', 'Dupont & Fils; Lyon', 'Lyon', '89,00', '1', false, '2024-02-11 10:02:31', 'call before delivery'],
    ['100233', 'Rossi S.p.A.', 'Milano', '12,50', '10', true, '2024-02-12 16:45:09', 'line one\r\nline two'],
    ['100234', 'Nowak', 'Kraków', '0,99', '1', true, '2024-02-13 08:00:00', null],
    ['100235', 'van der Berg B.V.', 'Utrecht', '450,00', '2', false, '2024-02-13 11:30:00', 'quote "urgent"'],
  ]);
  t.same(
    csv2parquet(fixture('orders-eu.csv'), { delimiter: ';' }),
    failure('malformed CSV: line 6 has 7 fields, but the header has 8 (pass { padShortRows: true } to read missing fields as nulls)'),
    'without padShortRows the short row is refused, with its line (after a two-line field)',
  );
});

t.test('build-results.psv: pipes, a two-character comment prefix, list cells, a short row', async (t) => {
  const path = parquetFile(t, fixture('build-results.psv'), { delimiter: '|', comment: '--', padShortRows: true });
  t.same(await duck.describe(path), [
    ['run_id', 'BIGINT'],
    ['branch', 'VARCHAR'],
    ['duration_s', 'DOUBLE'],
    ['passed', 'BIGINT'],
    ['failed', 'BIGINT'],
    ['flaky_rate', 'DOUBLE'],
    ['green', 'BOOLEAN'],
    ['tags', 'VARCHAR[]'],
  ]);
  t.same(await rowsOf(path), [
    ['8812', 'main', 742.5, '1204', '0', 0, true, ['nightly', 'linux']],
    ['8813', 'release/2.4', 801, '1198', '6', 0.0125, false, ['nightly', 'linux', 'arm64']],
    ['8815', 'feature/csv-dialects', 95.25, '311', '0', null, null, null],
    ['8816', 'main', 760, '1204', '2', 0.5, false, []],
    ['8817', 'fix|pipes', 12, '7', '0', 1, true, ['manual']],
  ]);
  // Written back (always with ','), the whole floats keep their '.0' and the lists their brackets.
  t.equal(
    csvOf(parquet2csv(duck.read(path))),
    [
      'run_id,branch,duration_s,passed,failed,flaky_rate,green,tags',
      '8812,main,742.5,1204,0,0.0,true,"[""nightly"", ""linux""]"',
      '8813,release/2.4,801.0,1198,6,0.0125,false,"[""nightly"", ""linux"", ""arm64""]"',
      '8815,feature/csv-dialects,95.25,311,0,,,',
      '8816,main,760.0,1204,2,0.5,false,[]',
      '8817,fix|pipes,12.0,7,0,1.0,true,"[""manual""]"',
      '',
    ].join('\n'),
  );
});

t.test('delimiters: any single character, quoting still works around it', async (t) => {
  for (const d of ['\t', ';', '|', ' ', ':', '^', '\u00a7', '\u2016']) {
    const csv = ['a', 'b', 'c'].join(d) + '\n' + ['1', `"x${d}y"`, '2.5'].join(d) + '\n' + ['2', '"q ""z"""', ''].join(d) + '\n';
    const path = parquetFile(t, csv, { delimiter: d });
    t.same(
      await duck.describe(path),
      [
        ['a', 'BIGINT'],
        ['b', 'VARCHAR'],
        ['c', 'DOUBLE'],
      ],
      `${JSON.stringify(d)}: types`,
    );
    t.same(
      await rowsOf(path),
      [
        ['1', `x${d}y`, 2.5],
        ['2', 'q "z"', null],
      ],
      `${JSON.stringify(d)}: rows`,
    );
  }
  // With another delimiter, ',' is an ordinary character.
  const path = parquetFile(t, 'a;b\n1,5;x,y\n', { delimiter: ';' });
  t.same(await rowsOf(path), [['1,5', 'x,y']], 'commas are data');
});

t.test('comment lines: only at the start of a record, never inside a quoted field', async (t) => {
  const csv = [
    '#!format v2',
    '# exported by hand',
    'id,text',
    '1,"keeps',
    '# this line, inside the quotes"',
    '#skipped',
    '2,a # in the middle is data',
    ' # indented: data; not a comment (no trimming)',
    '3,x',
    '# a last comment without a line break',
  ].join('\r\n');
  t.same(
    csv2parquet(csv, { comment: '#' }),
    failure('malformed CSV: line 8 has 1 field, but the header has 2 (pass { padShortRows: true } to read missing fields as nulls)'),
    'an indented # is a record',
  );
  const path = parquetFile(t, csv, { comment: '#', padShortRows: true });
  t.same(await rowsOf(path), [
    ['1', 'keeps\r\n# this line, inside the quotes'],
    ['2', 'a # in the middle is data'],
    [' # indented: data; not a comment (no trimming)', null],
    ['3', 'x'],
  ]);
  t.same(await duck.describe(path), [
    ['id', 'VARCHAR'],
    ['text', 'VARCHAR'],
  ]);
  const only = csv2parquet('# nothing but comments\n#\n', { comment: '#' });
  t.same(only, failure('the CSV is empty: it needs at least a header row'), 'comments alone are an empty CSV');
  const multi = parquetFile(t, '// header follows\nn\n//1\n2\n/3\n', { comment: '//' });
  t.same(await rowsOf(multi), [['2'], ['/3']], 'a two-character prefix must match whole');
  t.same(csv2parquet('#a,b\n1,2\n').success, true, 'without the option, # is data');
});

t.test('padShortRows: missing fields are nulls and keep the column types; long rows are still refused', async (t) => {
  const csv = 'n,f,b,s,l\n1,2.5,true,x,"[1, 2]"\n2\n3,,false\n4,0.5\n';
  t.same(
    csv2parquet(csv),
    failure('malformed CSV: line 3 has 1 field, but the header has 5 (pass { padShortRows: true } to read missing fields as nulls)'),
    'refused by default',
  );
  const path = parquetFile(t, csv, { padShortRows: true });
  t.same(await duck.describe(path), [
    ['n', 'BIGINT'],
    ['f', 'DOUBLE'],
    ['b', 'BOOLEAN'],
    ['s', 'VARCHAR'],
    ['l', 'BIGINT[]'],
  ]);
  t.same(await rowsOf(path), [
    ['1', 2.5, true, 'x', ['1', '2']],
    ['2', null, null, null, null],
    ['3', null, false, null, null],
    ['4', 0.5, null, null, null],
  ]);
  t.same(csv2parquet('a,b\n1\n1,2,3\n', { padShortRows: true }), failure("malformed CSV: line 3 has more fields than the header's 2"), 'a long row');
  t.same(
    csv2parquet('a,b\n1,2\n\n3\n', { padShortRows: false }).error,
    'malformed CSV: line 4 has 1 field, but the header has 2 (pass { padShortRows: true } to read missing fields as nulls)',
    'false is the default',
  );
  // Blank lines are still skipped, not read as rows of nulls.
  t.same(await rowsOf(parquetFile(t, 'a,b\n1,2\n\n\n3\n', { padShortRows: true })), [
    ['1', '2'],
    ['3', null],
  ]);
  // Padding across chunk boundaries (rows are read 2,048 at a time, chunks are 16,384 rows).
  const many = ['a,b,c'];
  for (let i = 0; i < 40_000; i++) many.push(i % 3 === 0 ? String(i) : `${i},${i / 2},z`);
  const big = parquetFile(t, many.join('\n'), { padShortRows: true });
  t.same(await duck.rows(`SELECT count(*)::INT, count(b)::INT, count(c)::INT, sum(a)::BIGINT FROM read_parquet('${big}')`), [
    [40_000, 26_666, 26_666, '799980000'],
  ]);
  t.same(await duck.describe(big), [
    ['a', 'BIGINT'],
    ['b', 'DOUBLE'],
    ['c', 'VARCHAR'],
  ]);
});

t.test('a one-column header holding another usual delimiter is refused, naming the option to pass', async (t) => {
  const cases: [string, unknown, string][] = [
    [
      'station_id\tname\tlat\n1\tx\t2\n',
      undefined,
      "the header has no ',' but 2 tabs: pass { delimiter: '\\t' } (or quote the header name to keep one column)",
    ],
    ['a;b\n1;2\n', undefined, "the header has no ',' but 1 semicolon: pass { delimiter: ';' } (or quote the header name to keep one column)"],
    ['a|b|c|d\n', undefined, "the header has no ',' but 3 pipes: pass { delimiter: '|' } (or quote the header name to keep one column)"],
    ['a,b,c\n1,2,3\n', { delimiter: ';' }, "the header has no ';' but 2 commas: pass { delimiter: ',' } (or quote the header name to keep one column)"],
    ['a;b;c|d\n', { delimiter: '\t' }, "the header has no '\\t' but 2 semicolons: pass { delimiter: ';' } (or quote the header name to keep one column)"],
  ];
  for (const [csv, options, error] of cases) t.same(csv2parquet(csv, options), failure(error), JSON.stringify(csv));
  t.same(
    csv2parquet(fixture('weather-stations.tsv'), { comment: '#', padShortRows: true }).error,
    "the header has no ',' but 8 tabs: pass { delimiter: '\\t' } (or quote the header name to keep one column)",
    'the TSV fixture without its delimiter',
  );
  // A quoted header, or one without those characters, is a one-column CSV as before.
  t.same(await rowsOf(parquetFile(t, '"a;b"\nx;y\n')), [['x;y']], 'a quoted header keeps one column');
  t.same(await rowsOf(parquetFile(t, 'only one column\n1\n2\n')), [['1'], ['2']], 'no other delimiter in the header');
  t.same(
    await duck.describe(parquetFile(t, 'a\tb\n1\t2\n', { delimiter: '\t' })),
    [
      ['a', 'BIGINT'],
      ['b', 'BIGINT'],
    ],
    'with the delimiter it names',
  );
});

t.test('wrong option values: a TypeError or RangeError with the exact rule', async (t) => {
  const cases: [unknown, [string, string]][] = [
    [{ delimiter: 9 }, ['TypeError', "ld.csv2parquet: options.delimiter must be a one-character string such as ',', ';', '|' or '\\t', got a number"]],
    [{ delimiter: [';'] }, ['TypeError', "ld.csv2parquet: options.delimiter must be a one-character string such as ',', ';', '|' or '\\t', got an array"]],
    [{ delimiter: true }, ['TypeError', "ld.csv2parquet: options.delimiter must be a one-character string such as ',', ';', '|' or '\\t', got a boolean"]],
    [{ delimiter: '' }, ['RangeError', "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got an empty string"]],
    [
      { delimiter: '::' },
      ['RangeError', "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got '::' (2 characters)"],
    ],
    [
      { delimiter: '\\t' },
      ['RangeError', "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got '\\\\t' (2 characters)"],
    ],
    [
      { delimiter: '😀' },
      ['RangeError', "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got '😀' (2 characters)"],
    ],
    [{ delimiter: '\ud83d' }, ['RangeError', 'ld.csv2parquet: options.delimiter cannot be half of a surrogate pair: it would split characters']],
    [{ delimiter: '"' }, ['RangeError', `ld.csv2parquet: options.delimiter cannot be '"': it is the quote character`]],
    [{ delimiter: '\n' }, ['RangeError', 'ld.csv2parquet: options.delimiter cannot be a line break: line breaks end records']],
    [{ delimiter: '\r' }, ['RangeError', 'ld.csv2parquet: options.delimiter cannot be a line break: line breaks end records']],
    [{ comment: 35 }, ['TypeError', "ld.csv2parquet: options.comment must be a string such as '#', got a number"]],
    [{ comment: { prefix: '#' } }, ['TypeError', "ld.csv2parquet: options.comment must be a string such as '#', got an object"]],
    [{ comment: '' }, ['RangeError', 'ld.csv2parquet: options.comment cannot be empty (leave it out for no comment lines)']],
    [{ comment: '#'.repeat(MAX_COMMENT_CHARS + 1) }, ['RangeError', 'ld.csv2parquet: options.comment is 17 characters, over the limit of 16']],
    [{ comment: '#\n' }, ['RangeError', 'ld.csv2parquet: options.comment cannot hold a line break']],
    [{ comment: '"#' }, ['RangeError', `ld.csv2parquet: options.comment cannot start with '"': it would hide quoted fields`]],
    [
      { comment: ',' },
      ['RangeError', "ld.csv2parquet: options.comment cannot start with the delimiter ',': every record with an empty first field would be skipped"],
    ],
    [
      { comment: ';;', delimiter: ';' },
      ['RangeError', "ld.csv2parquet: options.comment cannot start with the delimiter ';': every record with an empty first field would be skipped"],
    ],
    [{ padShortRows: 'true' }, ['TypeError', 'ld.csv2parquet: options.padShortRows must be true or false, got a string']],
    [{ padShortRows: 1 }, ['TypeError', 'ld.csv2parquet: options.padShortRows must be true or false, got a number']],
    [{ inferDates: 'false' }, ['TypeError', 'ld.csv2parquet: options.inferDates must be true or false, got a string']],
    [{ inferDates: 0 }, ['TypeError', 'ld.csv2parquet: options.inferDates must be true or false, got a number']],
    [
      { delimeter: ';' },
      ['TypeError', "ld.csv2parquet: unknown option 'delimeter' (the options are compression, delimiter, comment, padShortRows, inferDates)"],
    ],
    [
      { sep: '\t', delimiter: '\t' },
      ['TypeError', "ld.csv2parquet: unknown option 'sep' (the options are compression, delimiter, comment, padShortRows, inferDates)"],
    ],
    [';', ['TypeError', "ld.csv2parquet: options must be an object like {compression: 'zstd'}, got a string"]],
    [
      { compression: 'zstd', delimiter: 0 },
      ['TypeError', "ld.csv2parquet: options.delimiter must be a one-character string such as ',', ';', '|' or '\\t', got a number"],
    ],
  ];
  for (const [options, expected] of cases)
    t.same(
      thrown(() => csv2parquet('a,b\n1,2\n', options)),
      expected,
      JSON.stringify(options),
    );
  t.same(
    thrown(() => csv2parquet('a\n1\n', { delimiter: null, comment: undefined, padShortRows: null, inferDates: null })),
    'no error',
    'null and undefined mean the default',
  );
});

t.test('hostile option values: messages stay short, nothing is echoed at length, the next call works', async (t) => {
  const huge = 'x'.repeat(5_000_000);
  const [name, message] = thrown(() => csv2parquet('a\n1\n', { delimiter: huge })) as [string, string];
  t.equal(name, 'RangeError');
  t.equal(
    message,
    "ld.csv2parquet: options.delimiter must be a single character such as ',', ';', '|' or '\\t', got 'xxxxxxxxxxxxxxxxxxxx…' (5000000 characters)",
  );
  t.same(
    thrown(() => csv2parquet('a\n1\n', { comment: huge })),
    ['RangeError', 'ld.csv2parquet: options.comment is 5000000 characters, over the limit of 16'],
  );
  t.same(
    thrown(() => csv2parquet('a\n1\n', { [huge]: 1 })),
    ['TypeError', "ld.csv2parquet: unknown option 'xxxxxxxxxxxxxxxxxxxx…' (the options are compression, delimiter, comment, padShortRows, inferDates)"],
  );
  t.same(
    thrown(() => csv2parquet('a\n1\n', { "it's\u0000": 1 })),
    ['TypeError', "ld.csv2parquet: unknown option 'it\\'s\\u0000' (the options are compression, delimiter, comment, padShortRows, inferDates)"],
    'control characters and quotes are escaped',
  );
  const manyKeys = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
  t.same(
    thrown(() => csv2parquet('a\n1\n', manyKeys)),
    ['TypeError', "ld.csv2parquet: unknown option 'k0' (the options are compression, delimiter, comment, padShortRows, inferDates)"],
  );
  // A comment that matches every line, and a delimiter that never occurs: clear results, no hang.
  t.same(csv2parquet('x\n'.repeat(100_000), { comment: 'x' }), failure('the CSV is empty: it needs at least a header row'));
  t.same(await rowsOf(parquetFile(t, 'a b\n1 2\n', { delimiter: '\u0000' })), [['1 2']], 'a NUL delimiter that never occurs: one column');
  t.equal(csv2parquet('a;b\n1;2\n', { delimiter: ';' }).success, true, 'the next call works');
});
