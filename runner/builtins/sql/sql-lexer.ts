/**
 * A small SQL lexer with one profile per supported dialect, used by the SQL checks (spec "SQL checks")
 * to find statement boundaries and keywords the way each database would.
 *
 * The dialects disagree on exactly the things a semicolon trick relies on:
 *
 * | | PostgreSQL | MySQL | BigQuery | Snowflake | T-SQL |
 * |---|---|---|---|---|---|
 * | `#` line comment | no (operator) | yes | yes | no | no |
 * | `//` line comment | no | no | no | yes | no |
 * | `--` line comment | always | only before a space or control character | always | always | always |
 * | nested `/* /* *\/ *\/` | yes | no | no | no | yes |
 * | `/*! ... *\/` runs its content | no | yes | no | no | no |
 * | backslash escapes in `'...'` | only in `E'...'` | yes | yes | yes | no |
 * | `"..."` | identifier | string | string | identifier | identifier |
 * | other quoting | `$tag$...$tag$` | `` `id` `` | `` `id` ``, `'''...'''` | `$$...$$` | `[id]`, a `GO` line |
 *
 * So the checks lex a query with every profile and require it to be safe under each reading that
 * does not fail outright (an unterminated quote or comment means that database would refuse it).
 * Unknown characters (a fullwidth `；`, a Greek question mark) are plain punctuation, never separators.
 */

export type DialectName = 'PostgreSQL' | 'MySQL' | 'BigQuery' | 'Snowflake' | 'T-SQL';

export interface LexProfile {
  readonly dialect: DialectName;
  readonly hashComments: boolean;
  readonly slashSlashComments: boolean;
  /** MySQL: `--` starts a comment only when a space, a control character or the end follows. */
  readonly dashDashNeedsSpace: boolean;
  readonly nestedBlockComments: boolean;
  /** MySQL/MariaDB `/*! ... *\/` and `/*M! ... *\/`: the content is SQL that the server runs. */
  readonly executableComments: boolean;
  /** Backslash escapes in `'...'` (and in `"..."` where that is a string). */
  readonly backslashEscapes: boolean;
  readonly doubleQuotes: 'identifier' | 'string';
  readonly backticks: 'doubled' | 'backslash' | false;
  readonly brackets: boolean;
  readonly dollarQuotes: 'tagged' | 'plain' | false;
  /** PostgreSQL `E'...'`: backslash escapes in this string only. */
  readonly escapeStringPrefix: boolean;
  readonly tripleQuotes: boolean;
  /** MySQL: `$` may start an identifier (deprecated since 8.0.32, still accepted). */
  readonly dollarStartsWords: boolean;
  /** T-SQL tools split batches at a line holding only `GO`. */
  readonly goSeparator: boolean;
  /** Letters that may prefix a string literal (`N'..'`, `X'..'`, `r'..'`...), lower case. */
  readonly stringPrefixes: ReadonlySet<string>;
}

export const PROFILES: readonly LexProfile[] = [
  {
    dialect: 'PostgreSQL',
    hashComments: false,
    slashSlashComments: false,
    dashDashNeedsSpace: false,
    nestedBlockComments: true,
    executableComments: false,
    backslashEscapes: false,
    doubleQuotes: 'identifier',
    backticks: false,
    brackets: false,
    dollarQuotes: 'tagged',
    escapeStringPrefix: true,
    tripleQuotes: false,
    dollarStartsWords: false,
    goSeparator: false,
    stringPrefixes: new Set(['e', 'b', 'x', 'n']),
  },
  {
    dialect: 'MySQL',
    hashComments: true,
    slashSlashComments: false,
    dashDashNeedsSpace: true,
    nestedBlockComments: false,
    executableComments: true,
    backslashEscapes: true,
    doubleQuotes: 'string',
    backticks: 'doubled',
    brackets: false,
    dollarQuotes: false,
    escapeStringPrefix: false,
    tripleQuotes: false,
    dollarStartsWords: true,
    goSeparator: false,
    stringPrefixes: new Set(['n', 'b', 'x']),
  },
  {
    dialect: 'BigQuery',
    hashComments: true,
    slashSlashComments: false,
    dashDashNeedsSpace: false,
    nestedBlockComments: false,
    executableComments: false,
    backslashEscapes: true,
    doubleQuotes: 'string',
    backticks: 'backslash',
    brackets: false,
    dollarQuotes: false,
    escapeStringPrefix: false,
    tripleQuotes: true,
    dollarStartsWords: false,
    goSeparator: false,
    stringPrefixes: new Set(['r', 'b', 'rb', 'br']),
  },
  {
    dialect: 'Snowflake',
    hashComments: false,
    slashSlashComments: true,
    dashDashNeedsSpace: false,
    nestedBlockComments: false,
    executableComments: false,
    backslashEscapes: true,
    doubleQuotes: 'identifier',
    backticks: false,
    brackets: false,
    dollarQuotes: 'plain',
    escapeStringPrefix: false,
    tripleQuotes: false,
    dollarStartsWords: false,
    goSeparator: false,
    stringPrefixes: new Set(['x']),
  },
  {
    dialect: 'T-SQL',
    hashComments: false,
    slashSlashComments: false,
    dashDashNeedsSpace: false,
    nestedBlockComments: true,
    executableComments: false,
    backslashEscapes: false,
    doubleQuotes: 'identifier',
    backticks: false,
    brackets: true,
    dollarQuotes: false,
    escapeStringPrefix: false,
    tripleQuotes: false,
    dollarStartsWords: false,
    goSeparator: true,
    stringPrefixes: new Set(['n']),
  },
];

export type TokenKind = 'word' | 'string' | 'quoted' | 'number' | 'punct' | 'separator';

export interface Token {
  readonly kind: TokenKind;
  readonly start: number;
  readonly end: number;
  /** For a word: the word in lower case. For punctuation: the character. Otherwise the source text. */
  readonly text: string;
  /** For a quoted identifier: its opening quote character. */
  readonly quote?: string;
}

/** One statement-sized stretch of tokens between separators. */
export interface Piece {
  readonly tokens: readonly Token[];
  /** 1-based position among the non-empty pieces. */
  readonly index: number;
  /** The first piece, or the first after a T-SQL `GO` line: where T-SQL runs a bare procedure name. */
  readonly batchStart: boolean;
}

export type LexFailure = 'an unterminated string literal' | 'an unterminated quoted identifier' | 'an unterminated comment';

/**
 * A failed reading still reports the pieces completed (ended by a separator) before the unterminated
 * quote or comment: a server that runs statements one by one (MySQL with multiple statements) runs
 * those before it reaches the error. `rest` holds the tokens of the broken last piece.
 */
export type LexResult =
  | { ok: true; profile: LexProfile; tokens: Token[]; pieces: Piece[] }
  | { ok: false; profile: LexProfile; reason: LexFailure; pieces: Piece[]; rest: Piece | undefined };

const WORD_START = /[A-Za-z_\p{L}]/uy;
const WORD_REST = /[\w$\p{L}\p{N}\p{M}]*/uy;
const DOLLAR_WORD = /\$[\w$\p{L}\p{N}\p{M}]*/uy;
const NUMBER = /(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[\w$\p{L}\p{N}]*/uy;
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$/y;
const WHITESPACE = /\s+/y;

class Unterminated extends Error {
  override readonly name = 'Unterminated';
  constructor(readonly reason: LexFailure) {
    super(reason);
  }
}

/** Lexes `sql` with one profile; comments are dropped, separators (`;`, a T-SQL `GO` line) kept as tokens. */
export function lex(sql: string, profile: LexProfile): LexResult {
  let tokens: Token[] = [];
  let failure: LexFailure | undefined;
  try {
    tokenize(sql, profile, tokens);
  } catch (err) {
    if (!(err instanceof Unterminated)) throw err;
    failure = err.reason;
  }
  if (profile.goSeparator) tokens = markGoLines(sql, tokens);
  const pieces = split(tokens);
  if (failure === undefined) return { ok: true, profile, tokens, pieces };
  // The piece the failure is in has no separator after it: it is the broken rest.
  const last = tokens[tokens.length - 1];
  const rest = last && last.kind !== 'separator' ? pieces.pop() : undefined;
  return { ok: false, profile, reason: failure, pieces, rest };
}

export function lexAll(sql: string): LexResult[] {
  return PROFILES.map((p) => lex(sql, p));
}

/** Appends the tokens of `s` to `out`; throws Unterminated where a quote or comment does not end. */
function tokenize(s: string, p: LexProfile, out: Token[]): void {
  const n = s.length;
  let i = 0;
  /** Open MySQL executable comments (`/*!`): their closing `*\/` is dropped like a comment. */
  let openExecutable = 0;
  const match = (re: RegExp, at: number): string | undefined => {
    re.lastIndex = at;
    const m = re.exec(s);
    return m ? m[0] : undefined;
  };
  while (i < n) {
    const c = s[i]!;
    const next = s[i + 1];
    const ws = match(WHITESPACE, i);
    if (ws) {
      i += ws.length;
      continue;
    }
    // Comments.
    if (c === '-' && next === '-') {
      const after = s.charCodeAt(i + 2);
      if (!p.dashDashNeedsSpace || i + 2 >= n || after <= 32) {
        i = lineEnd(s, i);
        continue;
      }
    }
    if ((c === '#' && p.hashComments) || (c === '/' && next === '/' && p.slashSlashComments)) {
      i = lineEnd(s, i);
      continue;
    }
    if (c === '*' && next === '/' && openExecutable > 0) {
      openExecutable--;
      i += 2;
      continue;
    }
    if (c === '/' && next === '*') {
      if (p.executableComments && (s[i + 2] === '!' || (s[i + 2] === 'M' && s[i + 3] === '!'))) {
        // MySQL runs what is inside; only the markers (and the version number) are dropped.
        i += s[i + 2] === '!' ? 3 : 4;
        while (i < n && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) i++;
        openExecutable++;
        continue;
      }
      i = blockCommentEnd(s, i, p.nestedBlockComments);
      continue;
    }
    // Separators.
    if (c === ';') {
      out.push({ kind: 'separator', start: i, end: i + 1, text: ';' });
      i++;
      continue;
    }
    // Strings and quoted identifiers.
    if (c === "'") {
      i = pushString(out, s, i, i, "'", p.backslashEscapes, p);
      continue;
    }
    if (c === '"') {
      if (p.doubleQuotes === 'string') i = pushString(out, s, i, i, '"', p.backslashEscapes, p);
      else i = pushQuoted(out, s, i, '"', '"', false);
      continue;
    }
    if (c === '`' && p.backticks) {
      i = pushQuoted(out, s, i, '`', '`', p.backticks === 'backslash');
      continue;
    }
    if (c === '[' && p.brackets) {
      i = pushQuoted(out, s, i, '[', ']', false);
      continue;
    }
    if (c === '$') {
      if (p.dollarQuotes === 'tagged' || p.dollarQuotes === 'plain') {
        const tag = p.dollarQuotes === 'tagged' ? match(DOLLAR_TAG, i) : next === '$' ? '$$' : undefined;
        if (tag) {
          const close = s.indexOf(tag, i + tag.length);
          if (close < 0) throw new Unterminated('an unterminated string literal');
          out.push({ kind: 'string', start: i, end: close + tag.length, text: s.slice(i, close + tag.length) });
          i = close + tag.length;
          continue;
        }
      }
      if (p.dollarStartsWords) {
        const w = match(DOLLAR_WORD, i)!;
        out.push({ kind: 'word', start: i, end: i + w.length, text: w.toLowerCase() });
        i += w.length;
        continue;
      }
    }
    // Numbers, words.
    const num = match(NUMBER, i);
    if (num) {
      out.push({ kind: 'number', start: i, end: i + num.length, text: num });
      i += num.length;
      continue;
    }
    if (match(WORD_START, i) !== undefined) {
      const first = String.fromCodePoint(s.codePointAt(i)!);
      const rest = match(WORD_REST, i + first.length) ?? '';
      const end = i + first.length + rest.length;
      const word = s.slice(i, end).toLowerCase();
      // A string prefix written against its quote: N'..', E'..', r"..", U&'..'.
      const q = s[end];
      if (q === "'" || (q === '"' && p.doubleQuotes === 'string')) {
        if (p.stringPrefixes.has(word) || (word.startsWith('_') && p.dialect === 'MySQL')) {
          const backslash = p.backslashEscapes || (p.escapeStringPrefix && word === 'e');
          i = pushString(out, s, i, end, q, backslash, p);
          continue;
        }
      }
      if (p.dialect === 'PostgreSQL' && word === 'u' && s[end] === '&' && (s[end + 1] === "'" || s[end + 1] === '"')) {
        if (s[end + 1] === "'") i = pushString(out, s, i, end + 1, "'", false, p);
        else i = pushQuoted(out, s, end + 1, '"', '"', false, i);
        continue;
      }
      out.push({ kind: 'word', start: i, end, text: word });
      i = end;
      continue;
    }
    // Anything else is one punctuation character (a whole code point).
    const ch = String.fromCodePoint(s.codePointAt(i)!);
    out.push({ kind: 'punct', start: i, end: i + ch.length, text: ch });
    i += ch.length;
  }
}

const LINE_BREAK = /[\r\n]/g;

function lineEnd(s: string, i: number): number {
  LINE_BREAK.lastIndex = i;
  const m = LINE_BREAK.exec(s);
  return m ? m.index : s.length;
}

function blockCommentEnd(s: string, start: number, nested: boolean): number {
  if (!nested) {
    const close = s.indexOf('*/', start + 2);
    if (close < 0) throw new Unterminated('an unterminated comment');
    return close + 2;
  }
  let depth = 0;
  let i = start;
  while (i < s.length) {
    if (s[i] === '/' && s[i + 1] === '*') {
      depth++;
      i += 2;
    } else if (s[i] === '*' && s[i + 1] === '/') {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else {
      i++;
    }
  }
  throw new Unterminated('an unterminated comment');
}

/** A string literal from `start` (its prefix, if any) with its opening quote at `open`. */
function pushString(out: Token[], s: string, start: number, open: number, q: string, backslash: boolean, p: LexProfile): number {
  let i: number;
  if (p.tripleQuotes && s.startsWith(q.repeat(3), open)) {
    const close = q.repeat(3);
    i = open + 3;
    for (;;) {
      if (i >= s.length) throw new Unterminated('an unterminated string literal');
      if (s[i] === '\\') i += 2;
      else if (s.startsWith(close, i)) {
        i += 3;
        break;
      } else i++;
    }
  } else {
    i = open + 1;
    for (;;) {
      if (i >= s.length) throw new Unterminated('an unterminated string literal');
      const c = s[i];
      if (backslash && c === '\\') i += 2;
      else if (c === q) {
        // A doubled quote is an escaped quote (or, where that is not supported, two adjacent
        // literals: the same boundaries either way).
        if (s[i + 1] === q) i += 2;
        else {
          i++;
          break;
        }
      } else i++;
    }
  }
  out.push({ kind: 'string', start, end: i, text: s.slice(start, i) });
  return i;
}

function pushQuoted(out: Token[], s: string, open: number, q: string, close: string, backslash: boolean, start = open): number {
  let i = open + 1;
  for (;;) {
    if (i >= s.length) throw new Unterminated('an unterminated quoted identifier');
    const c = s[i];
    if (backslash && c === '\\') i += 2;
    else if (c === close) {
      if (s[i + 1] === close) i += 2;
      else {
        i++;
        break;
      }
    } else i++;
  }
  out.push({ kind: 'quoted', start, end: i, text: s.slice(start, i), quote: q });
  return i;
}

/** T-SQL tools (sqlcmd, SSMS) end a batch at a line holding only `GO` (optionally a repeat count). */
function markGoLines(s: string, tokens: Token[]): Token[] {
  const out: Token[] = [];
  const newlineBetween = (a: number, b: number) => /[\r\n]/.test(s.slice(a, b));
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k]!;
    const prev = tokens[k - 1];
    if (t.kind !== 'word' || t.text !== 'go' || (prev && !newlineBetween(prev.end, t.start))) {
      out.push(t);
      continue;
    }
    let last = t;
    let j = k + 1;
    const count = tokens[j];
    if (count && count.kind === 'number' && !newlineBetween(t.end, count.start)) {
      last = count;
      j++;
    }
    const next = tokens[j];
    if (next && !newlineBetween(last.end, next.start)) {
      out.push(t);
      continue;
    }
    out.push({ kind: 'separator', start: t.start, end: last.end, text: 'go' });
    k = j - 1;
  }
  return out;
}

function split(tokens: readonly Token[]): Piece[] {
  const pieces: Piece[] = [];
  let current: Token[] = [];
  let batchStart = true;
  for (const t of tokens) {
    if (t.kind !== 'separator') {
      current.push(t);
      continue;
    }
    if (current.length > 0) {
      pieces.push({ tokens: current, index: pieces.length + 1, batchStart });
      batchStart = false;
    }
    current = [];
    if (t.text === 'go') batchStart = true;
  }
  if (current.length > 0) pieces.push({ tokens: current, index: pieces.length + 1, batchStart });
  return pieces;
}

/**
 * The text of tokens `from..to` (inclusive) with this profile's reading made explicit for a parser:
 * comments become a space, every string literal becomes `'s'`, a quoted identifier keeps its quotes
 * with a harmless name inside. A parser with different quoting or comment rules then sees the same
 * structure as this profile does. `replace` maps the index of a token to the last index of a run of
 * tokens written as `text` instead (see sql-parameters.ts).
 */
export function canonicalText(
  sql: string,
  tokens: readonly Token[],
  from = 0,
  to = tokens.length - 1,
  replace?: ReadonlyMap<number, { last: number; text: string }>,
): string {
  let out = '';
  for (let k = from; k <= to; k++) {
    const t = tokens[k]!;
    if (k > from) {
      const gap = sql.slice(tokens[k - 1]!.end, t.start);
      out += /^\s*$/.test(gap) ? gap : /[\r\n]/.test(gap) ? '\n' : ' ';
    }
    const r = replace?.get(k);
    if (r) {
      out += r.text;
      k = r.last;
    } else if (t.kind === 'string') out += "'s'";
    else if (t.kind === 'quoted') {
      const close = t.quote === '[' ? ']' : t.quote!;
      const body = t.text.slice(t.text.indexOf(t.quote!) + 1, -1).replace(/[^\p{L}\p{N}_ .$-]/gu, '_');
      out += `${t.quote}${body === '' ? '_' : body}${close}`;
    } else out += sql.slice(t.start, t.end);
  }
  return out;
}
