import { canonicalText, type Token } from './sql-lexer.js';
import { endsValueAt, isPunct } from './sql-keywords.js';

/**
 * Query parameters, as client libraries write them: `?` and `?1` (JDBC, ODBC, mysql2, SQLite), `:name`
 * and `:1` (named binds: Oracle style, SQLAlchemy, Snowflake), `$1` (PostgreSQL), `@name` (T-SQL,
 * BigQuery). node-sql-parser's grammars know only some of them, each in its own dialect, so the checks
 * parse the statement once more with every parameter written as the literal `1` when the first parse
 * fails (sql-checks.ts). That text is used only for the parse: the keyword checks read the query as it
 * is, where a parameter's name is no keyword (`:delete` is a name, see isBareWord).
 *
 * Parameters are found among the tokens of one reading, so a `?`, `:x` or `$1` inside a string, a quoted
 * name or a comment is text and stays as it is. What is not a parameter:
 * - a PostgreSQL cast `a::int` and a Snowflake path `v:name` or slice `a[1:2]` (the colon follows a
 *   word, number, name, closing bracket or another colon), MySQL's `:=`;
 * - PostgreSQL's JSON operators `?|`, `?&`, `?-`, `?#` (a `?` with one of those right after it); a lone
 *   `?` between two operands (`doc ? 'key'`) is still taken as a parameter: that text then fails to parse
 *   and the original one decides;
 * - a system variable `@@name`.
 *
 * Returns undefined when the statement holds no parameter.
 */
export function textWithoutParameters(sql: string, tokens: readonly Token[], from = 0, to = tokens.length - 1): string | undefined {
  const replace = new Map<number, { last: number; text: string }>();
  for (let k = from; k <= to; k++) {
    const t = tokens[k]!;
    const next = k < to ? tokens[k + 1] : undefined;
    const adjacent = next !== undefined && next.start === t.end;
    const prev = k > from ? tokens[k - 1] : undefined;
    let last: number | undefined;
    if (isPunct(t, '?')) {
      if (adjacent && isPunct(next, '|', '&', '-', '#')) continue;
      last = adjacent && next.kind === 'number' ? k + 1 : k;
    } else if (isPunct(t, ':')) {
      if (endsValueAt(prev, t.start) || !adjacent || (next.kind !== 'word' && next.kind !== 'number')) continue;
      last = k + 1;
    } else if (isPunct(t, '$') && adjacent && next.kind === 'number' && /^\d+$/.test(next.text)) {
      last = k + 1;
    } else if (t.kind === 'word' && /^\$\d+$/.test(t.text)) {
      // MySQL's reading: `$1` is one word there.
      last = k;
    } else if (isPunct(t, '@') && adjacent && next.kind === 'word' && !(prev && prev.end === t.start && isPunct(prev, '@'))) {
      last = k + 1;
    }
    if (last === undefined) continue;
    replace.set(k, { last, text: '1' });
    k = last;
  }
  return replace.size === 0 ? undefined : canonicalText(sql, tokens, from, to, replace);
}
