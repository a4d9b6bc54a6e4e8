/**
 * ld.csv2parquet and ld.parquet2csv on real files (test/fixtures/csv/real, sources and licences in
 * its SOURCES.md): US government weather, labour and aviation data, a Debian release table with
 * short rows, the time-zone database's country table (tabs, `#` comments), Unicode's name aliases
 * (`;`, `#` comments) and IEEE's registry (quoted commas, quotes, line breaks inside fields, CRLF).
 *
 * For each file, with the dialect options that file needs:
 * - the Parquet file, read by DuckDB, has the column names and types listed here, and the same rows
 *   as DuckDB's own read_csv of the same file with the same dialect (types compared column by
 *   column; where DuckDB's sniffer reads a column as another type, the reason is given, and the values
 *   are compared both as text and as DuckDB's type);
 * - parquet2csv → csv2parquet gives back the same column types and values (and the second CSV is the
 *   first), and so does DuckDB's own Parquet of the file → parquet2csv → csv2parquet.
 * Then: the files with their delimiter or comment option left out are refused with an error that says
 * what to pass, never read as one silent column.
 */
import t from 'tap';
import { csv2parquet, csvOf, Duck, fixtureFolder, parquet2csv } from './format-test-helpers.js';

const duck = await Duck.open();
t.teardown(() => duck.close());

const { text, path: pathOf } = fixtureFolder(new URL('../../../../test/fixtures/csv/real/', import.meta.url));

interface RealFile {
  name: string;
  /** csv2parquet's options for this file. */
  options: Record<string, unknown>;
  /** The same dialect for DuckDB's read_csv. */
  duckDialect: string;
  rows: number;
  /** `[name, type]` of csv2parquet's columns, as DuckDB reads the Parquet file. */
  columns: [string, string][];
  /** Columns that DuckDB's sniffer reads as another type: that type, and why ours differs. */
  duckTypes?: Record<string, [string, string]>;
  /** A condition on the Parquet file's columns, and the one row it selects. */
  spot: [string, unknown[]];
}

const FILES: RealFile[] = [
  {
    name: 'seattle-weather.csv',
    options: {},
    duckDialect: '',
    rows: 1461,
    columns: [
      ['date', 'DATE'],
      ['precipitation', 'DOUBLE'],
      ['temp_max', 'DOUBLE'],
      ['temp_min', 'DOUBLE'],
      ['wind', 'DOUBLE'],
      ['weather', 'VARCHAR'],
    ],
    // Whole floats written `0.0` / `5.0` stay floats.
    spot: ["date = DATE '2012-01-01'", ['2012-01-01', 0, 12.8, 5, 4.7, 'drizzle']],
  },
  {
    name: 'unemployment.tsv',
    options: { delimiter: '\t' },
    duckDialect: "delim='\t'",
    rows: 3218,
    columns: [
      ['id', 'BIGINT'],
      ['rate', 'VARCHAR'],
    ],
    duckTypes: {
      // The file writes rates as `.097`: csv2parquet's float grammar is JSON's (a digit before the
      // point, runner/builtins/formats/cell-parsers.ts), so that a typed value is written back as the
      // same text; DuckDB (and pandas) read `.097` as 0.097.
      rate: ['DOUBLE', "leading-dot decimals ('.097') are text for csv2parquet"],
    },
    spot: ['id = 1001', ['1001', '.097']],
  },
  {
    name: 'airports.csv',
    options: {},
    duckDialect: '',
    rows: 999,
    columns: [
      ['iata', 'VARCHAR'],
      ['name', 'VARCHAR'],
      ['city', 'VARCHAR'],
      ['state', 'VARCHAR'],
      ['country', 'VARCHAR'],
      ['latitude', 'DOUBLE'],
      ['longitude', 'DOUBLE'],
    ],
    spot: ["iata = '35A'", ['35A', 'Union County, Troy Shelton', 'Union', 'SC', 'USA', 34.68680111, -81.64121167]],
  },
  {
    name: 'birdstrikes.csv',
    options: {},
    duckDialect: '',
    rows: 400,
    columns: [
      ['Airport Name', 'VARCHAR'],
      ['Aircraft Make Model', 'VARCHAR'],
      ['Effect Amount of damage', 'VARCHAR'],
      ['Flight Date', 'DATE'],
      ['Aircraft Airline Operator', 'VARCHAR'],
      ['Origin State', 'VARCHAR'],
      ['Phase of flight', 'VARCHAR'],
      ['Wildlife Size', 'VARCHAR'],
      ['Wildlife Species', 'VARCHAR'],
      ['Time of day', 'VARCHAR'],
      ['Cost Other', 'BIGINT'],
      ['Cost Repair', 'BIGINT'],
      ['Cost Total $', 'BIGINT'],
      ['Speed IAS in knots', 'BIGINT'],
    ],
    spot: [
      `"Flight Date" = DATE '1990-01-08'`,
      [
        'BARKSDALE AIR FORCE BASE ARPT',
        'T-38A',
        'None',
        '1990-01-08',
        'MILITARY',
        'Louisiana',
        'Climb',
        'Large',
        'Turkey vulture',
        'Day',
        '0',
        '0',
        '0',
        '300',
      ],
    ],
  },
  {
    name: 'debian.csv',
    // Releases not yet out end after their `created` date: short rows.
    options: { padShortRows: true },
    duckDialect: 'null_padding=true',
    rows: 22,
    columns: [
      ['version', 'DOUBLE'],
      ['codename', 'VARCHAR'],
      ['series', 'VARCHAR'],
      ['created', 'DATE'],
      ['release', 'DATE'],
      ['eol', 'DATE'],
      ['eol-lts', 'DATE'],
      ['eol-elts', 'DATE'],
    ],
    // `1.1` … `3.1`, then `4.0`, then `7` … `15`: one float column (an empty version is null).
    spot: ["codename = 'Sid'", [null, 'Sid', 'sid', '1993-08-16', null, null, null, null]],
  },
  {
    name: 'iso3166.tab',
    // No header line (the column names are in a comment): both readers take the first record as it.
    options: { delimiter: '\t', comment: '#' },
    duckDialect: "delim='\t', comment='#'",
    rows: 248,
    columns: [
      ['AD', 'VARCHAR'],
      ['Andorra', 'VARCHAR'],
    ],
    spot: [`"AD" = 'CI'`, ['CI', "Côte d'Ivoire"]],
  },
  {
    name: 'NameAliases.txt',
    // `;`-separated, `#` comments and blank lines between blocks, no header line (as iso3166.tab).
    // No data line holds a `#` after its start, where DuckDB would cut the line and csv2parquet not.
    options: { delimiter: ';', comment: '#' },
    duckDialect: "delim=';', comment='#'",
    rows: 472,
    columns: [
      ['0000', 'VARCHAR'],
      ['NULL', 'VARCHAR'],
      ['control', 'VARCHAR'],
    ],
    spot: [`"0000" = '0080' AND "control" = 'figment'`, ['0080', 'PADDING CHARACTER', 'figment']],
  },
  {
    name: 'oui36.csv',
    options: {},
    duckDialect: '',
    rows: 156,
    columns: [
      ['Registry', 'VARCHAR'],
      ['Assignment', 'VARCHAR'],
      ['Organization Name', 'VARCHAR'],
      ['Organization Address', 'VARCHAR'],
    ],
    // Records end with CRLF; a line break inside a quoted field is a bare LF; trailing spaces are data.
    spot: ['"Assignment" = \'8C1F64C57\'', ['MA-S', '8C1F64C57', 'Strategic Robotic Systems', '14842 NE 95th Street\nBuilding 5 Redmond WA US 98052 ']],
  },
];

/** How many rows are in one query and not the other, both ways (`[[0, 0]]` when equal as multisets). */
function difference(a: string, b: string): Promise<unknown[][]> {
  return duck.rows(`SELECT (SELECT count(*) FROM ((${a}) EXCEPT ALL (${b})))::INT, (SELECT count(*) FROM ((${b}) EXCEPT ALL (${a})))::INT`);
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;
const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;
const fromParquet = (path: string) => `SELECT * FROM read_parquet(${sqlString(path)})`;

for (const f of FILES) {
  t.test(`${f.name}: csv2parquet ${JSON.stringify(f.options)} agrees with DuckDB's read_csv; the round trips keep types and values`, async (t) => {
    const path = duck.parquetOf(t, text(f.name), f.options, 'csv2parquet');
    if (!path) return;
    t.same(await duck.describe(path), f.columns, 'column names and types');
    t.same(await duck.rows(`SELECT count(*)::INT FROM read_parquet(${sqlString(path)})`), [[f.rows]], 'row count');

    // DuckDB's reader, same dialect, its own type detection.
    const readCsv = (extra: string) => `read_csv(${sqlString(pathOf(f.name))}, header=true${f.duckDialect ? `, ${f.duckDialect}` : ''}${extra})`;
    const sniffed = readCsv('');
    const duckColumns = (await duck.rows(`DESCRIBE SELECT * FROM ${sniffed}`)).map((r) => [r[0], r[1]]);
    const expected = f.columns.map(([name, type]) => [name, f.duckTypes?.[name]?.[0] ?? type]);
    t.same(duckColumns, expected, `DuckDB's names and types${f.duckTypes ? ` (differing: ${Object.values(f.duckTypes).map((d) => d[1])})` : ''}`);
    t.same(await duck.rows(`SELECT count(*)::INT FROM ${sniffed}`), [[f.rows]], "DuckDB's row count");

    // Values: the same multiset of rows, typed. Where the types differ, DuckDB reads that column as
    // ours (text compared with text), and ours is cast to DuckDB's type (values compared as DuckDB's).
    const differing = Object.entries(f.duckTypes ?? {});
    const asOurs = differing.length ? readCsv(`, types={${differing.map(([c]) => `${sqlString(c)}: 'VARCHAR'`).join(', ')}}`) : sniffed;
    t.same(await difference(fromParquet(path), `SELECT * FROM ${asOurs}`), [[0, 0]], 'same rows as DuckDB read them');
    if (differing.length) {
      const cast = differing.map(([c, [type]]) => `${ident(c)}::${type} AS ${ident(c)}`).join(', ');
      const oursCast = `SELECT * REPLACE (${cast}) FROM read_parquet(${sqlString(path)})`;
      t.same(await difference(oursCast, `SELECT * FROM ${sniffed}`), [[0, 0]], "same rows with the differing columns cast to DuckDB's types");
    }
    const [where, row] = f.spot;
    t.same(await duck.rows(`SELECT * FROM read_parquet(${sqlString(path)}) WHERE ${where}`), [row], `the row where ${where}`);

    // parquet2csv → csv2parquet (its CSV is always `,`-separated, so the default dialect reads it).
    const csv1 = csvOf(parquet2csv(duck.read(path)));
    const again = duck.parquetOf(t, csv1, undefined, 'csv2parquet of parquet2csv');
    if (!again) return;
    t.same(await duck.describe(again), f.columns, 'round trip: the same column types');
    t.same(await difference(fromParquet(path), fromParquet(again)), [[0, 0]], 'round trip: the same values');
    t.equal(csvOf(parquet2csv(duck.read(again))), csv1, 'round trip: the second CSV is the first');

    // DuckDB's own Parquet of the file (its types) → parquet2csv → csv2parquet keeps DuckDB's types.
    const duckParquet = duck.path();
    await duck.run(`COPY (SELECT * FROM ${sniffed}) TO ${sqlString(duckParquet)} (FORMAT parquet)`);
    const fromDuck = duck.parquetOf(t, csvOf(parquet2csv(duck.read(duckParquet))), undefined, "csv2parquet of parquet2csv of DuckDB's Parquet");
    if (!fromDuck) return;
    t.same(await duck.describe(fromDuck), expected, "DuckDB's Parquet, round trip: DuckDB's types");
    t.same(await difference(fromParquet(duckParquet), fromParquet(fromDuck)), [[0, 0]], "DuckDB's Parquet, round trip: the same values");
  });
}

t.test('inferDates: false keeps the dates of seattle-weather.csv as their text', async (t) => {
  const path = duck.parquetOf(t, text('seattle-weather.csv'), { inferDates: false }, 'csv2parquet');
  if (!path) return;
  t.same((await duck.describe(path))[0], ['date', 'VARCHAR']);
  const duckText = `SELECT * FROM read_csv(${sqlString(pathOf('seattle-weather.csv'))}, header=true, types={'date': 'VARCHAR'})`;
  t.same(await difference(fromParquet(path), duckText), [[0, 0]], 'the same rows as DuckDB reading date as text');
});

t.test('a real file read without its delimiter or comment option is refused, never one silent column', async (t) => {
  const hint = (count: string, option: string) =>
    `the header has no ',' but ${count}: pass { delimiter: '${option}' } (or quote the header name to keep one column)`;
  const refusals: [string, unknown, string][] = [
    // The TSV with the default ',': its header `id<TAB>rate` is one column holding a tab.
    ['unemployment.tsv', undefined, hint('1 tab', '\\t')],
    ['iso3166.tab', { comment: '#' }, hint('1 tab', '\\t')],
    ['NameAliases.txt', { comment: '#' }, hint('2 semicolons', ';')],
    ['oui36.csv', { delimiter: '\t' }, "the header has no '\\t' but 3 commas: pass { delimiter: ',' } (or quote the header name to keep one column)"],
    ['unemployment.tsv', { delimiter: ';' }, "the header has no ';' but 1 tab: pass { delimiter: '\\t' } (or quote the header name to keep one column)"],
    // Without `comment`, the first comment line is the header: a later line with the delimiter is
    // refused as longer than it (the message names the line and, when the file opens with #, the option).
    [
      'iso3166.tab',
      { delimiter: '\t' },
      "malformed CSV: line 30 has more fields than the header's 1: its first line starts with '#'; if those are comment lines, pass { comment: '#' }",
    ],
    [
      'NameAliases.txt',
      { delimiter: ';' },
      "malformed CSV: line 71 has more fields than the header's 1: its first line starts with '#'; if those are comment lines, pass { comment: '#' }",
    ],
    // Neither option: commas in the comment text split lines as well.
    [
      'iso3166.tab',
      undefined,
      "malformed CSV: line 3 has more fields than the header's 1: its first line starts with '#'; if those are comment lines, pass { comment: '#' }",
    ],
    ['debian.csv', undefined, 'malformed CSV: line 2 has 6 fields, but the header has 8 (pass { padShortRows: true } to read missing fields as nulls)'],
  ];
  for (const [name, options, error] of refusals) {
    t.same(csv2parquet(text(name), options), { base64: '', success: false, error }, `${name} ${JSON.stringify(options) ?? 'without options'}`);
  }
});
