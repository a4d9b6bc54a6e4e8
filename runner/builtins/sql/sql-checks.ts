import { type BuiltinModule, GuestFacingError, type SyncBuiltin } from '../guest-boundary.js';
import { isBareWord, isPunct, isWritingFunction, READ_LEADERS, STATEMENT_KEYWORDS, WRITE_WORDS } from './sql-keywords.js';
import { canonicalText, lexAll, type DialectName, type LexResult, type Piece, type Token } from './sql-lexer.js';
import { textWithoutParameters } from './sql-parameters.js';
import { readsByTokens } from './sql-token-proof.js';
import {
  classifyStatements,
  isPlainStatementList,
  LOCKING_HINTS,
  PARSE_STEPS_PER_CHAR,
  parseIn,
  ParseMeter,
  PARSER_DIALECTS,
  type Classification,
} from './sql-parsers.js';

/**
 * Spec "SQL checks": `ld.validateSqlQuery(query)` and `ld.ensureReadOnlySqlQuery(query)`, both
 * synchronous, both returning `query.trim()` or throwing.
 *
 * Neither knows which database the query is for, so both consider every supported dialect
 * (PostgreSQL, MySQL, BigQuery, Snowflake, T-SQL):
 *
 * 1. Readings. The query is lexed with each dialect's comment and quoting rules (sql-lexer.ts) and
 *    split into statements at `;` (and T-SQL `GO` lines). It must be safe under every reading, so
 *    `select '\'; drop table t; --'` (one string in MySQL, two statements in PostgreSQL) and
 *    `select 1 # x; drop table t` (a comment in MySQL, an operator in PostgreSQL) are refused.
 *    Semicolons in strings, quoted names, comments and dollar quotes are text, and so is any
 *    look-alike character (a fullwidth `；`). A reading that breaks off at an unterminated quote
 *    still counts with the statements before the break (MySQL runs those before it fails); when
 *    every reading breaks off, the query is a SyntaxError. Empty statements (`select 1;;`) are
 *    ignored, as PostgreSQL and MySQL do.
 * 2. Junk. A piece that starts with no statement keyword after a separator is a syntax error in that
 *    reading, not a statement: MySQL reads `select $$a;b$$` as `select $$a` and `b$$`. For validate,
 *    node-sql-parser settles such disagreements: when a grammar accepts the whole query, junk pieces
 *    do not count; when none does, every piece counts. T-SQL needs no semicolons, so `select 1 drop
 *    table t` and `select 1 select 2` count as two statements in its reading.
 * 3. Read-only (ensureReadOnlySqlQuery) means every statement is a SELECT (UNION etc., CTEs whose
 *    bodies are SELECTs), VALUES/TABLE, SHOW, DESCRIBE/DESC, or EXPLAIN/DESCRIBE of a read. In every
 *    reading, each statement's leading keyword must be one of those, and no write keyword (INSERT,
 *    UPDATE, DELETE, MERGE, DROP, CREATE, ALTER, TRUNCATE, GRANT, EXEC, INTO, ...) may appear outside
 *    strings, quoted names and comments: this refuses writable CTEs, `SELECT ... INTO`,
 *    `EXPLAIN [ANALYZE] DELETE` and T-SQL statements without semicolons. Locking reads are refused
 *    the same way (lockingReadAt): `FOR UPDATE`, `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE`,
 *    `LOCK IN SHARE MODE` and T-SQL's locking table hints (`WITH (UPDLOCK)`, HOLDLOCK, ...).
 *    Functions that write, lock or run other SQL are refused too (isWritingFunction: nextval, setval,
 *    set_config, advisory locks, lo_import, dblink, query_to_xml, GET_LOCK, OPENQUERY, NEXT VALUE FOR...).
 *    Then proof: in at least one reading every SELECT-like statement must parse, in some dialect's
 *    grammar, as a read (canonical text, see canonicalText; once more with its parameters `?`, `:name`,
 *    `$1`, `@p` as literals, see sql-parameters.ts), or, when every statement of every reading passes
 *    the stricter token check of sql-token-proof.ts, be proven by its tokens; SHOW and DESCRIBE need no
 *    parse. A query that cannot be proven read-only is refused and the message says so. On the corpus of
 *    real statements in test/fixtures/sql-corpus, 0.4 % of the reads are refused (19.4 % with the
 *    grammars alone).
 * 4. Cost. Lexing and the keyword checks are linear. The grammars backtrack exponentially on some
 *    nestings (`CAST(CAST(1 AS INTX) AS INTX)`, 8 levels: a minute), so every parse is metered and
 *    gives up over its budget (sql-parsers.ts, PARSE_STEPS_*): a text no grammar parses because one
 *    gave up is refused as too complex; the call's deadline is checked inside each parse too.
 *
 * What is not detected: side effects of functions not in that list (user-defined functions, `SLEEP`,
 * extensions); run such queries with a read-only database role too.
 */

/** Longer queries are refused before parsing (node-sql-parser needs ~0.5 s per dialect for 50 KB). */
export const MAX_QUERY_LENGTH = 100_000;

const ONLY = '(only SELECT, SHOW, DESCRIBE and EXPLAIN)';
const DIALECT_LIST = 'PostgreSQL, MySQL, BigQuery, Snowflake, T-SQL';

export const validateSqlQuery: SyncBuiltin = (args, ctx) => {
  const fn = 'validateSqlQuery';
  const query = queryArg(args, fn);
  const trimmed = query.trim();
  const { lexed, broken } = lexOrThrow(trimmed, fn);

  // Statements per reading; pieces that cannot be a statement in that reading are counted apart.
  const countIn = (dialect: DialectName, pieces: readonly Piece[]) => {
    let statements = 0;
    let all = 0;
    for (const piece of pieces) {
      const shape = shapeOf(piece);
      // T-SQL needs no semicolons: `select 1 drop table t` is two statements there.
      const n = dialect === 'T-SQL' && shape.statement ? tsqlStatementsIn(piece.tokens, shape.lead) : 1;
      if (shape.statement) statements += n;
      all += n;
    }
    return { dialect, statements, all };
  };
  const counts = lexed.map((r) => countIn(r.profile.dialect, r.pieces));
  if (counts.every((c) => c.all === 0)) throw new GuestFacingError('Error', `${fn}: the query is empty`);
  // A reading that breaks off (an unterminated quote) still runs the statements before the break.
  for (const r of broken) {
    const c = countIn(r.profile.dialect, r.rest ? [...r.pieces, r.rest] : r.pieces);
    counts.push({ dialect: c.dialect, statements: c.statements, all: c.statements });
  }

  // Pieces that are junk in some reading (the `b$$` MySQL reads in `select $$a;b$$`) are settled by
  // the grammars: when one of them accepts the whole query, that other dialect would refuse the query
  // rather than run a second statement; when none does, every piece counts.
  const maxStatements = Math.max(...counts.map((c) => c.statements));
  const junk = counts.some((c) => c.all !== c.statements);
  const parsed = junk && maxStatements <= 1 ? firstParse(trimmed, new ParseMeter(trimmed.length, ctx.deadline), fn) : undefined;
  const countAll = junk && !parsed && maxStatements <= 1;
  const perReading = counts.map((c) => ({ dialect: c.dialect, n: countAll ? c.all : c.statements }));
  const n = Math.max(parsed?.count ?? 0, ...perReading.map((c) => c.n));
  if (!parsed && maxStatements === 0) throw new GuestFacingError('Error', `${fn}: the query holds no SQL statement`);
  if (n > 1) {
    const readers = perReading.filter((c) => c.n === n).map((c): DialectName => c.dialect);
    if (parsed?.count === n && !readers.includes(parsed.dialect)) readers.push(parsed.dialect);
    const how = readers.length >= perReading.length ? '' : ` (as ${listOf(readers)} ${readers.length === 1 ? 'reads' : 'read'} it)`;
    throw new GuestFacingError('Error', `${fn}: the query must hold exactly one statement, but it holds ${n}${how}`);
  }
  return trimmed;
};

export const ensureReadOnlySqlQuery: SyncBuiltin = (args, ctx) => {
  const fn = 'ensureReadOnlySqlQuery';
  const query = queryArg(args, fn);
  const trimmed = query.trim();
  const { lexed, broken } = lexOrThrow(trimmed, fn);
  if (lexed.every((r) => r.pieces.length === 0)) throw new GuestFacingError('Error', `${fn}: the query is empty`);

  // 1. Keywords, under every reading: statement types, write keywords anywhere in a read statement.
  //    A reading that breaks off (an unterminated quote) counts with the statements up to the break.
  const planAll = (dialect: DialectName, pieces: readonly Piece[]) =>
    pieces.map((piece) => {
      const shape = shapeOf(piece);
      return { piece, plan: shape.statement ? planPiece(trimmed, piece, shape.lead, dialect) : undefined };
    });
  const plans = lexed.map((r) => ({ dialect: r.profile.dialect, pieces: planAll(r.profile.dialect, r.pieces) }));
  const brokenPlans = broken.map((r) => ({ pieces: planAll(r.profile.dialect, r.rest ? [...r.pieces, r.rest] : r.pieces) }));
  for (const reading of [...plans, ...brokenPlans]) {
    for (const { plan } of reading.pieces) {
      if (plan?.kind === 'refuse') throw new GuestFacingError('Error', `${fn}: ${plan.message}`);
    }
  }

  // 2. Proof: one reading in which every statement is a listing statement or parses as read-only. A
  //    statement no grammar parses is proven by its tokens (sql-token-proof.ts) when every statement of
  //    every reading, broken ones included, passes that stricter check.
  const byTokens = [...plans, ...brokenPlans].every((r) => r.pieces.every(({ plan }) => plan?.kind === 'listing' || (plan?.kind === 'parse' && plan.byTokens)));
  const meter = new ParseMeter(trimmed.length, ctx.deadline);
  const verdicts = new Map<string, Verdict>();
  let unproven: { piece: Piece; total: number } | undefined;
  let tooComplex = false;
  for (const reading of plans) {
    let proven = true;
    for (const { piece, plan } of reading.pieces) {
      if (plan === undefined) {
        proven = false;
        unproven ??= { piece, total: reading.pieces.length };
        break;
      }
      if (plan.kind !== 'parse') continue;
      let verdict = verdicts.get(plan.text);
      if (!verdict) {
        verdict = classifyText(plan.text, meter, fn);
        // Parameters some grammar does not know (`:name`, `$1::int`, `?1`): once more, as literals.
        if ((verdict.kind === 'unknown' || verdict.kind === 'too-complex') && plan.paramFree !== undefined) {
          const again = classifyText(plan.paramFree, meter, fn);
          if (again.kind !== 'unknown') verdict = again;
        }
        verdicts.set(plan.text, verdict);
      }
      if (verdict.kind === 'write') {
        throw new GuestFacingError('Error', `${fn}: ${verdict.type} statements are not allowed${plan.context} ${ONLY}`);
      }
      if ((verdict.kind === 'unknown' || verdict.kind === 'too-complex') && !byTokens) {
        if (verdict.kind === 'too-complex') tooComplex = true;
        proven = false;
        unproven ??= { piece, total: reading.pieces.length };
        break;
      }
    }
    if (proven) return trimmed;
  }
  const which = unproven && unproven.total > 1 ? ` (statement ${unproven.piece.index})` : '';
  if (tooComplex) {
    throw new GuestFacingError(
      'Error',
      `${fn}: the query could not be verified as read-only${which}: it is too complex for the SQL parsers ` +
        `(over their budget of ${PARSE_STEPS_PER_CHAR} steps per character; nested expressions such as CAST(CAST(...)) ` +
        'make them backtrack); simplify or un-nest it',
    );
  }
  throw new GuestFacingError(
    'Error',
    `${fn}: the query could not be verified as read-only${which}: none of the supported SQL dialects (${DIALECT_LIST}) could parse it`,
  );
};

function queryArg(args: unknown[], fn: string): string {
  const q = args[0];
  if (typeof q !== 'string') {
    throw new GuestFacingError('TypeError', `${fn}(query) takes a string, got ${args.length === 0 ? 'nothing' : describe(q)}`);
  }
  if (q.length > MAX_QUERY_LENGTH) {
    throw new GuestFacingError('RangeError', `${fn}: the query is ${q.length} characters long, over the limit of ${MAX_QUERY_LENGTH}`);
  }
  return q;
}

type Lexed = Extract<LexResult, { ok: true }>;
type Broken = Extract<LexResult, { ok: false }>;

/**
 * The readings that succeed, and those that break off at an unterminated quote or comment; when every
 * reading breaks off, a SyntaxError.
 */
function lexOrThrow(sql: string, fn: string): { lexed: Lexed[]; broken: Broken[] } {
  const all = lexAll(sql);
  const lexed = all.filter((r): r is Lexed => r.ok);
  const broken = all.filter((r): r is Broken => !r.ok);
  if (lexed.length === 0) {
    throw new GuestFacingError('SyntaxError', `${fn}: the query is not valid SQL: it has ${broken[0]!.reason}`);
  }
  return { lexed, broken };
}

/**
 * The first grammar (in PARSER_DIALECTS order) that parses the whole query, with its statement count.
 * A grammar that gives up (over its step budget, see parseIn) counts as not parsing it.
 */
function firstParse(sql: string, meter: ParseMeter, fn: string): { dialect: DialectName; count: number } | undefined {
  for (const d of PARSER_DIALECTS) {
    checkTime(meter.deadline, fn);
    const outcome = parseIn(d, sql, meter);
    if (outcome.kind === 'timeout') throw outOfTime(fn);
    if (outcome.kind === 'parsed' && isPlainStatementList(outcome.statements)) return { dialect: d.name, count: outcome.statements.length };
  }
  return undefined;
}

type Verdict = Classification | { kind: 'too-complex' };

/**
 * The first decisive verdict of the grammars on one statement's canonical text; 'unknown' when none
 * parses it, 'too-complex' when none parses it and at least one gave up (over its step budget).
 */
function classifyText(text: string, meter: ParseMeter, fn: string): Verdict {
  let gaveUp = false;
  for (const d of PARSER_DIALECTS) {
    checkTime(meter.deadline, fn);
    const outcome = parseIn(d, text, meter);
    if (outcome.kind === 'timeout') throw outOfTime(fn);
    if (outcome.kind === 'gave-up') gaveUp = true;
    if (outcome.kind !== 'parsed') continue;
    const c = classifyStatements(outcome.statements);
    if (c.kind !== 'unknown') return c;
  }
  return gaveUp ? { kind: 'too-complex' } : { kind: 'unknown' };
}

function checkTime(deadline: number, fn: string): void {
  if (performance.now() > deadline) throw outOfTime(fn);
}

function outOfTime(fn: string): GuestFacingError {
  return new GuestFacingError('Error', `${fn}: the call ran out of time while checking the query`);
}

// ---------------------------------------------------------------------------------------------------
// Keyword-level plan of one statement (one piece of one reading).

/**
 * `parse`: the statement's canonical text for the grammars, the same with its parameters written as
 * literals (undefined when it has none), and whether its tokens alone prove it reads (sql-token-proof.ts).
 */
type Plan =
  | { kind: 'listing' }
  | { kind: 'parse'; text: string; paramFree: string | undefined; byTokens: boolean; context: string }
  | { kind: 'refuse'; message: string };

/** Words between EXPLAIN (or DESCRIBE used as EXPLAIN) and the explained statement. */
const EXPLAIN_OPTIONS = new Set([
  'analyze',
  'analyse',
  'verbose',
  'extended',
  'partitions',
  'format',
  'using',
  'tabular',
  'json',
  'text',
  'tree',
  'traditional',
  'with_recommendations',
  'plan',
  'for',
  'query',
  'costs',
  'buffers',
  'timing',
  'summary',
  'settings',
  'wal',
  'true',
  'false',
  'on',
  'off',
]);

/**
 * Whether a piece is a statement in its reading, and where its leading keyword is (after T-SQL labels
 * `name:` and opening `(` / `{`). A piece is a statement when that keyword starts a statement in some
 * dialect, or when it opens a batch (T-SQL runs `proc_name args` there). Any other piece — one that
 * starts with a string, a number, punctuation, or a name such as the `b$$` MySQL reads in
 * `select $$a;b$$` — is a syntax error in that dialect: it makes that reading fail, nothing more.
 */
function shapeOf(piece: Piece): { statement: boolean; lead: number } {
  const tokens = piece.tokens;
  let i = 0;
  // A label is a name, never a keyword: `select :name` starts with SELECT and a parameter.
  while (isWord(tokens[i]) && !STATEMENT_KEYWORDS.has(tokens[i]!.text) && isPunct(tokens[i + 1], ':') && !isPunct(tokens[i + 2], ':')) i += 2;
  while (isPunct(tokens[i], '(', '{')) i++;
  const lead = tokens[i];
  if (isWord(lead) && STATEMENT_KEYWORDS.has(lead.text)) return { statement: true, lead: i };
  const first = tokens[0];
  const opens = isWord(first) || isPunct(first, '(', '{');
  return { statement: piece.batchStart && opens, lead: isWord(lead) ? i : -1 };
}

function isWord(t: Token | undefined): t is Token {
  return t !== undefined && t.kind === 'word' && !t.text.startsWith('$');
}

/** Deeper nesting is refused unparsed: node-sql-parser's grammars recurse per level (and real queries stay far below). */
const MAX_NESTING = 256;

function planPiece(sql: string, piece: Piece, i: number, dialect: DialectName): Plan {
  const tokens = piece.tokens;
  if (nestingOf(tokens) > MAX_NESTING) {
    return { kind: 'refuse', message: `the query could not be verified as read-only: it nests parentheses more than ${MAX_NESTING} deep` };
  }
  const lead = tokens[i];
  if (i < 0 || !lead) return parsePlan(sql, tokens, 0, -1, '');
  const leader = lead.text;

  if (leader === 'explain' || leader === 'describe' || leader === 'desc') {
    let j = i + 1;
    // PostgreSQL: EXPLAIN (ANALYZE, FORMAT JSON) statement.
    if (leader === 'explain' && isPunct(tokens[j], '(') && !(tokens[j + 1]?.kind === 'word' && READ_LEADERS.has(tokens[j + 1]!.text))) {
      j = afterParens(tokens, j);
    }
    while (j < tokens.length && ((tokens[j]!.kind === 'word' && EXPLAIN_OPTIONS.has(tokens[j]!.text)) || isPunct(tokens[j], '='))) j++;
    const inner = tokens[j];
    const innerWord = inner?.kind === 'word' ? inner.text : isPunct(inner, '(') ? '(' : '';
    const explained = innerWord === '(' || STATEMENT_KEYWORDS.has(innerWord);
    if (!explained || (leader !== 'explain' && innerWord === 'table')) {
      // DESCRIBE t, DESC TABLE t, EXPLAIN t (MySQL): describes an object.
      const found = findWriteWord(tokens, j, leader);
      return found ? refusal(found.type, found.context) : { kind: 'listing' };
    }
    if (innerWord !== '(' && !READ_LEADERS.has(innerWord)) return refusal(innerWord.toUpperCase(), ', even under EXPLAIN');
    const found = findWriteWord(tokens, j, innerWord);
    if (found) return refusal(found.type, found.context || ', even under EXPLAIN');
    return parsePlan(sql, tokens, j, j, ', even under EXPLAIN');
  }
  if (leader === 'show') {
    const found = findWriteWord(tokens, i + 1, leader);
    return found ? refusal(found.type, found.context) : { kind: 'listing' };
  }
  if (READ_LEADERS.has(leader)) {
    const found = findWriteWord(tokens, i + 1, leader);
    if (found) return refusal(found.type, found.context);
    // T-SQL: `select 1 waitfor delay '1:00'` is a SELECT and then a WAITFOR.
    const next = dialect === 'T-SQL' ? tsqlStatements(tokens, i).otherStarter : undefined;
    if (next) return refusal(next.toUpperCase(), '');
    return parsePlan(sql, tokens, 0, i, '');
  }
  if (STATEMENT_KEYWORDS.has(leader)) return refusal(leader.toUpperCase(), '');
  const shown = leader.length > 40 ? `${leader.slice(0, 40)}…` : leader;
  return { kind: 'refuse', message: `statements starting with ${shown.toUpperCase()} are not allowed ${ONLY}` };
}

/** The plan of a statement to prove read-only from token `from` on, its leading keyword at `lead`. */
function parsePlan(sql: string, tokens: readonly Token[], from: number, lead: number, context: string): Plan {
  return {
    kind: 'parse',
    text: canonicalText(sql, tokens, from),
    paramFree: textWithoutParameters(sql, tokens, from),
    byTokens: lead >= 0 && readsByTokens(tokens, lead),
    context,
  };
}

function refusal(type: string, context: string): Plan {
  if (type.endsWith('()') || type === 'NEXTVAL' || type === 'NEXT VALUE FOR') {
    return { kind: 'refuse', message: `calls to ${type} are not allowed: it writes, locks or runs other statements ${ONLY}` };
  }
  return { kind: 'refuse', message: `${type} statements are not allowed${context} ${ONLY}` };
}

/**
 * The locking read that starts at token k, named for messages, or undefined: `FOR UPDATE`,
 * `FOR NO KEY UPDATE`, `FOR SHARE`, `FOR KEY SHARE` (PostgreSQL, MySQL 8), `LOCK IN SHARE MODE`
 * (MySQL), and T-SQL locking table hints (see LOCKING_HINTS) inside parentheses, in `WITH (...)`, the
 * older `t (...)` or `OPTION (TABLE HINT(...))`. Such a read takes locks that block writers (or
 * deadlocks them) until the transaction ends, so it is no read-only statement.
 */
function lockingReadAt(tokens: readonly Token[], k: number, depth: number): string | undefined {
  const t = tokens[k]!;
  const word = (j: number, ...texts: string[]) => isBareWord(tokens, j) && texts.includes(tokens[j]!.text);
  if (t.text === 'for' && isBareWord(tokens, k)) {
    if (word(k + 1, 'update')) return 'SELECT ... FOR UPDATE';
    if (word(k + 1, 'share')) return 'SELECT ... FOR SHARE';
    if (word(k + 1, 'no') && word(k + 2, 'key') && word(k + 3, 'update')) return 'SELECT ... FOR NO KEY UPDATE';
    if (word(k + 1, 'key') && word(k + 2, 'share')) return 'SELECT ... FOR KEY SHARE';
  }
  if (t.text === 'lock' && isBareWord(tokens, k) && word(k + 1, 'in') && word(k + 2, 'share') && word(k + 3, 'mode')) {
    return 'SELECT ... LOCK IN SHARE MODE';
  }
  if (depth > 0 && LOCKING_HINTS.has(t.text) && isBareWord(tokens, k) && !isPunct(tokens[k + 1], '(')) {
    return `SELECT ... WITH (${t.text.toUpperCase()})`;
  }
  return undefined;
}

/** The first write keyword or locking read from `from` on, with where it was found; undefined when there is none. */
function findWriteWord(tokens: readonly Token[], from: number, leader: string): { type: string; context: string } | undefined {
  let depth = 0;
  for (let k = from; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (isPunct(t, '(')) depth++;
    else if (isPunct(t, ')')) depth = Math.max(0, depth - 1);
    // A quoted name calls the same function (`"setval"(...)` in PostgreSQL, `[dbo].[f]` in T-SQL).
    if (t.kind === 'quoted') {
      const writing = writingCallAt(tokens, k);
      if (writing) return { type: writing, context: '' };
    }
    if (t.kind !== 'word') continue;
    const locking = lockingReadAt(tokens, k, depth);
    if (locking) return { type: locking, context: '' };
    const writing = writingCallAt(tokens, k);
    if (writing) return { type: writing, context: '' };
    if (!WRITE_WORDS.has(t.text) || !isBareWord(tokens, k)) continue;
    const prev = tokens[k - 1];
    const next = tokens[k + 1];
    // MySQL's INSERT(str, pos, len, newstr) string function.
    if (t.text === 'insert' && isPunct(next, '(')) continue;
    // T-SQL's join hint `INNER MERGE JOIN` (JOIN is reserved: no MERGE statement has it as its target).
    if (t.text === 'merge' && next?.kind === 'word' && next.text === 'join') continue;
    // SHOW CREATE TABLE t (MySQL) lists a definition.
    if (t.text === 'create' && leader === 'show' && k === from) continue;
    // The UPDATE of a locking read (found at its FOR) that a qualified or odd FOR hid: still a lock.
    if (t.text === 'update' && prev?.kind === 'word' && (prev.text === 'for' || prev.text === 'key')) {
      return { type: 'SELECT ... FOR UPDATE', context: '' };
    }
    const type = t.text === 'into' ? 'SELECT ... INTO' : t.text.toUpperCase();
    return { type, context: leader === 'with' && depth > 0 ? ', even inside a WITH clause' : '' };
  }
  return undefined;
}

/**
 * A call of a function that writes or locks (isWritingFunction) at token k, named for messages:
 * `f(...)` with f bare or schema-qualified, `seq.nextval` (Snowflake, Oracle style) and
 * `NEXT VALUE FOR seq` (T-SQL, MariaDB).
 */
function writingCallAt(tokens: readonly Token[], k: number): string | undefined {
  const t = tokens[k]!;
  const name = t.kind === 'quoted' ? unquotedName(t) : t.text;
  if (isPunct(tokens[k + 1], '(') && isWritingFunction(name)) return `${name.toUpperCase()}()`;
  if (name === 'nextval' && isPunct(tokens[k - 1], '.')) return 'NEXTVAL';
  if (t.kind === 'quoted') return undefined;
  if (t.text === 'next' && isBareWord(tokens, k) && tokens[k + 1]?.text === 'value' && tokens[k + 2]?.text === 'for') return 'NEXT VALUE FOR';
  return undefined;
}

/**
 * A quoted identifier's name in lower case, its quotes and doubled quotes removed. Lower case on purpose:
 * PostgreSQL's `"SETVAL"` names no function, but refusing it too is the safe side.
 */
function unquotedName(t: Token): string {
  const close = t.quote === '[' ? ']' : (t.quote ?? '"');
  return t.text
    .slice(1, -1)
    .replaceAll(close + close, close)
    .toLowerCase();
}

/**
 * Keywords that, at the top level of a T-SQL SELECT, can only start another statement: the ones that
 * change data, schema, permissions or the server, and WAITFOR. (Harmless statements such as PRINT or
 * SET @v, and words other dialects allow as column names such as COMMIT, are left out.)
 */
const TSQL_STARTERS = new Set([
  'insert',
  'update',
  'delete',
  'merge',
  'drop',
  'create',
  'alter',
  'truncate',
  'exec',
  'execute',
  'grant',
  'revoke',
  'deny',
  'waitfor',
  'backup',
  'restore',
  'kill',
  'shutdown',
  'dbcc',
  'bulk',
  'reconfigure',
  'updatetext',
  'writetext',
  'receive',
]);
const SET_OPERATORS = new Set(['union', 'all', 'except', 'intersect', 'distinct', 'minus']);

/**
 * How many statements T-SQL reads in a SELECT (or WITH ... SELECT) piece, where a statement may follow
 * another without a semicolon: a top-level SELECT that does not continue a set operation, or a
 * keyword that can only start a statement, begins a new one. Other pieces count as one.
 */
function tsqlStatementsIn(tokens: readonly Token[], lead: number): number {
  return tsqlStatements(tokens, lead).count;
}

/** The statement count of tsqlStatementsIn, and the first keyword other than SELECT that starts one. */
function tsqlStatements(tokens: readonly Token[], lead: number): { count: number; otherStarter?: string } {
  const leader = tokens[lead]?.text;
  let otherStarter: string | undefined;
  if (leader !== 'select' && leader !== 'with') return { count: 1 };
  let mainSeen = leader === 'select';
  let count = 1;
  let depth = 0;
  for (let k = lead + 1; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (isPunct(t, '(')) depth++;
    else if (isPunct(t, ')')) depth = Math.max(0, depth - 1);
    if (depth > 0 || t.kind !== 'word') continue;
    const prev = tokens[k - 1];
    const next = tokens[k + 1];
    if (isPunct(prev, '.') || isPunct(next, '.') || (prev && prev.end === t.start && isPunct(prev, '@', ':', '#'))) continue;
    if (!mainSeen) {
      // WITH x AS (...) SELECT|INSERT|UPDATE|DELETE|MERGE: the statement the CTEs belong to.
      if (['select', 'insert', 'update', 'delete', 'merge'].includes(t.text)) mainSeen = true;
      continue;
    }
    if (t.text === 'select') {
      if (!(prev?.kind === 'word' && SET_OPERATORS.has(prev.text))) count++;
    } else if (TSQL_STARTERS.has(t.text)) {
      // SELECT ... FOR [NO KEY] UPDATE; MySQL's INSERT() function.
      if (t.text === 'update' && prev?.kind === 'word' && (prev.text === 'for' || prev.text === 'key')) continue;
      if (t.text === 'insert' && isPunct(next, '(')) continue;
      // The join hint `INNER MERGE JOIN`.
      if (t.text === 'merge' && next?.kind === 'word' && next.text === 'join') continue;
      otherStarter ??= t.text;
      count++;
    }
  }
  return { count, otherStarter };
}

function nestingOf(tokens: readonly Token[]): number {
  let depth = 0;
  let max = 0;
  for (const t of tokens) {
    if (isPunct(t, '(', '[', '{')) max = Math.max(max, ++depth);
    else if (isPunct(t, ')', ']', '}')) depth = Math.max(0, depth - 1);
  }
  return max;
}

function afterParens(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    if (isPunct(tokens[k], '(')) depth++;
    else if (isPunct(tokens[k], ')') && --depth === 0) return k + 1;
  }
  return tokens.length;
}

function listOf(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Uint8Array) return 'binary data';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

export const SQL_CHECKS: BuiltinModule = {
  sync: { validateSqlQuery, ensureReadOnlySqlQuery },
  bindings: [
    { guest: 'validateSqlQuery', host: 'validateSqlQuery', mode: 'sync' },
    { guest: 'ensureReadOnlySqlQuery', host: 'ensureReadOnlySqlQuery', mode: 'sync' },
  ],
};
