import type { Token } from './sql-lexer.js';
import { isBareWord, isPunct, READ_LEADERS, STATEMENT_KEYWORDS } from './sql-keywords.js';

/**
 * The token-level proof of ensureReadOnlySqlQuery (sql-checks.ts): a SELECT-like statement that none
 * of node-sql-parser's grammars parses is still accepted when its tokens show that it only reads.
 *
 * Why: the grammars refuse about a fifth of real read statements (test/fixtures/sql-corpus: `SUM(DISTINCT
 * x)`, `LIMIT 1 + 1`, `a <=> b`, Snowflake `SELECT * RENAME`, pipe syntax...), and nothing in those
 * statements writes. What the parse proved beyond the keyword checks every statement passes first (no
 * write keyword, INTO, locking read or known writing function anywhere, in any reading) is that no other
 * statement hides behind the SELECT: in T-SQL a statement may follow another without a semicolon
 * (`select 1 set transaction isolation level serializable select * from t`). This proof keeps that
 * guarantee with a stricter word list instead of a grammar: it holds only when
 * - the statement starts with SELECT, WITH, VALUES or TABLE (after opening parentheses);
 * - its brackets balance;
 * - no bare word (not quoted, qualified or a variable) starts a statement in any dialect
 *   (STATEMENT_KEYWORDS), except the ones real reads use that start no T-SQL statement: the clause words
 *   of a read (SELECT, WITH, VALUES, TABLE, CASE, ELSE, FOR as in FOR XML / FOR SYSTEM_TIME, FETCH FIRST,
 *   DESC, START WITH, LOOP JOIN), Snowflake's `* RENAME` / `* REPLACE`, and COMMENT or SIGNAL as column
 *   names; END only to close a CASE; USE only in MySQL's `USE INDEX`; MERGE only in T-SQL's `MERGE JOIN`;
 *   IF, GET, REPEAT and REPLACE only as function calls. ADD (T-SQL `ADD SIGNATURE`) counts as a
 *   statement keyword here too;
 * - no statement keyword but SELECT or WITH follows Snowflake's flow operator `->>`.
 * The caller requires it in every reading of the query (each dialect's comment and quoting rules), as
 * for the keyword checks. Trade-off: such a statement may be malformed (the database then refuses it);
 * it is never a write the keyword checks would have let through, since those ran first and a grammar's
 * "write" verdict, where a grammar parses the statement, still refuses it.
 */
export function readsByTokens(tokens: readonly Token[], lead: number): boolean {
  const first = tokens[lead];
  if (first?.kind !== 'word' || !READ_LEADERS.has(first.text)) return false;
  if (!balanced(tokens)) return false;
  let cases = 0;
  for (let k = lead; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.kind !== 'word' || !isBareWord(tokens, k)) continue;
    const next = tokens[k + 1];
    // Snowflake's flow operator `->>` runs the statement after it (`select 1 ->> comment on ...`); after
    // PostgreSQL's and MySQL's `->>` comes a key, never a statement keyword.
    if (STATEMENT_KEYWORDS.has(t.text) && t.text !== 'select' && t.text !== 'with' && afterFlowOperator(tokens, k)) return false;
    if (t.text === 'case') cases++;
    if (!STATEMENT_KEYWORDS.has(t.text) && t.text !== 'add') continue;
    if (ALLOWED_INSIDE_A_READ.has(t.text)) continue;
    if (t.text === 'end' && cases > 0) {
      cases--;
      continue;
    }
    if (t.text === 'use' && next?.kind === 'word' && (next.text === 'index' || next.text === 'key')) continue;
    // T-SQL's join hint `INNER MERGE JOIN`.
    if (t.text === 'merge' && next?.kind === 'word' && next.text === 'join') continue;
    if (CALLABLE.has(t.text) && isPunct(next, '(')) continue;
    return false;
  }
  return true;
}

/** Statement keywords that real reads use and that start no T-SQL statement. */
const ALLOWED_INSIDE_A_READ = new Set([
  'select',
  'with',
  'values',
  'table',
  'case',
  'else',
  'for',
  'fetch',
  'desc',
  'start',
  'loop',
  'rename',
  'replace',
  'comment',
  'signal',
]);

/** Statement keywords that are also function names (MySQL IF(), REPEAT(), REPLACE(); GET() for JSON). */
const CALLABLE = new Set(['if', 'get', 'repeat', 'replace']);

function afterFlowOperator(tokens: readonly Token[], k: number): boolean {
  const [a, b, c] = [tokens[k - 3], tokens[k - 2], tokens[k - 1]];
  return isPunct(a, '-') && isPunct(b, '>') && isPunct(c, '>') && a!.end === b!.start && b!.end === c!.start;
}

function balanced(tokens: readonly Token[]): boolean {
  const open: string[] = [];
  const closes: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  for (const t of tokens) {
    if (t.kind !== 'punct') continue;
    if (t.text === '(' || t.text === '[' || t.text === '{') open.push(t.text);
    else if (t.text in closes && open.pop() !== closes[t.text]) return false;
  }
  return open.length === 0;
}
