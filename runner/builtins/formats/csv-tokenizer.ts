import { ConversionInputError } from './conversion-guard.js';
import { type CsvDialect, DEFAULT_DIALECT } from './csv-dialect.js';

/**
 * A streaming CSV tokenizer over a JS string that records where each cell is instead of copying it:
 * the column builders read numbers, booleans and UTF-8 straight from the text. Rows are read in
 * chunks of at most `chunkRows`; the spans of one chunk are stored column by column
 * (`starts[col * chunkRows + row]`), and reused for the next chunk, so memory does not grow with
 * the input.
 *
 * The dialect (RFC 4180 with the usual leniencies), decided here and documented in the README:
 * - the delimiter is `,` unless `dialect.delimiter` names another character (csv-dialect.ts); records
 *   end with `\n`, `\r\n` or a lone `\r`; a leading BOM is skipped;
 * - a field that starts with `"` is quoted: it ends at the next `"` not followed by another `"`
 *   (`""` is a literal quote), and may hold delimiters and line breaks. After its closing quote only
 *   a delimiter, a line break or the end of the text may follow, otherwise the CSV is malformed;
 * - a `"` inside an unquoted field is kept as a literal character;
 * - a quote that is never closed is an error (reported with the line it opened on);
 * - blank lines (nothing between two line breaks) are skipped anywhere, so a trailing line break
 *   does not add a row; with `dialect.comment`, so is a line that starts with the comment prefix
 *   (at the start of a record only: inside a quoted field it is data);
 * - every record must have as many fields as the header: a ragged row is an error that names the
 *   line and both counts (nothing is cut silently); with `dialect.padShortRows` a short record gets
 *   empty (null) fields for the missing ones, and a long one is still an error.
 */

const QUOTE = 34;
const LF = 10;
const CR = 13;

/** Flag bits of a cell. */
export const QUOTED = 1;
/** The quoted cell holds `""` pairs: its text must be unescaped before use. */
export const ESCAPED = 2;

export class CsvTokenizer {
  readonly text: string;
  /** Position of the next unread character. */
  pos = 0;
  ncols = 0;
  chunkRows = 0;
  starts = new Int32Array(0);
  ends = new Int32Array(0);
  flags = new Uint8Array(0);
  /** Rows read before the current chunk (for error messages). */
  rowsBefore = 0;
  /** Whether the header was one quoted field (then a one-column header is surely meant). */
  headerQuoted = false;
  private readonly delim: number;
  /** The largest of the delimiter and the line breaks: one comparison skips most characters. */
  private readonly stopMax: number;
  private readonly comment: string | undefined;
  private readonly commentFirst: number;
  private readonly padShortRows: boolean;
  /** Appended to "more fields than the header" when the file opens like a commented one and no `comment` was given. */
  private readonly commentHint: string;

  constructor(text: string, dialect: CsvDialect = DEFAULT_DIALECT) {
    this.text = text;
    if (text.charCodeAt(0) === 0xfeff) this.pos = 1;
    this.delim = dialect.delimiter.charCodeAt(0);
    this.stopMax = Math.max(this.delim, LF, CR);
    this.comment = dialect.comment;
    this.commentFirst = dialect.comment === undefined ? -1 : dialect.comment.charCodeAt(0);
    this.padShortRows = dialect.padShortRows;
    // Files that open with '#' lines (tzdata's .tab files, Unicode's data files) take the first comment
    // line as their header and then fail on the first real row: say what would read them.
    this.commentHint =
      dialect.comment === undefined && text.charCodeAt(this.pos) === 0x23
        ? ": its first line starts with '#'; if those are comment lines, pass { comment: '#' }"
        : '';
  }

  /** Where the line that holds `pos` ends (its line break, or the end of the text). */
  private lineEnd(pos: number): number {
    const s = this.text;
    const len = s.length;
    while (pos < len) {
      const c = s.charCodeAt(pos);
      if (c === LF || c === CR) break;
      pos++;
    }
    return pos;
  }

  /** Whether a record starting at `pos` is a comment line. */
  private isComment(pos: number, c: number): boolean {
    return c === this.commentFirst && this.text.startsWith(this.comment!, pos);
  }

  /**
   * Reads the header record (skipping blank lines before it) and sizes the span buffers so that one
   * chunk holds about `cellBudget` cells. Returns undefined for a text with no record at all.
   */
  readHeader(cellBudget: number, maxChunkRows: number): string[] | undefined {
    const s = this.text;
    const len = s.length;
    const delim = this.delim;
    let pos = this.pos;
    while (pos < len) {
      const c = s.charCodeAt(pos);
      if (c === LF) pos++;
      else if (c === CR) pos++;
      else if (this.isComment(pos, c)) pos = this.lineEnd(pos);
      else break;
    }
    if (pos >= len) return undefined;
    const names: string[] = [];
    let quoted = 0;
    for (;;) {
      let c = s.charCodeAt(pos);
      if (c === QUOTE) {
        const open = pos;
        let p = pos + 1;
        let value = '';
        for (;;) {
          const q = s.indexOf('"', p);
          if (q < 0) throw this.error(open, 'a quoted field is never closed (its opening quote is on line %LINE%)');
          value += s.slice(p, q);
          if (s.charCodeAt(q + 1) === QUOTE) {
            value += '"';
            p = q + 2;
            continue;
          }
          pos = q + 1;
          break;
        }
        names.push(value);
        quoted++;
        c = pos < len ? s.charCodeAt(pos) : -1;
        if (c !== delim && c !== LF && c !== CR && c !== -1) {
          throw this.error(pos, 'unexpected character after a closing quote on line %LINE% (a quote inside a quoted field must be doubled)');
        }
      } else {
        const start = pos;
        while (pos < len) {
          c = s.charCodeAt(pos);
          if (c === delim || c === LF || c === CR) break;
          pos++;
        }
        if (pos >= len) c = -1;
        names.push(s.slice(start, pos));
      }
      if (c === delim) {
        pos++;
        continue;
      }
      if (c === CR) {
        pos++;
        if (pos < len && s.charCodeAt(pos) === LF) pos++;
      } else if (c === LF) {
        pos++;
      }
      break;
    }
    this.pos = pos;
    this.headerQuoted = names.length === 1 && quoted === 1;
    this.ncols = names.length;
    this.chunkRows = Math.max(1, Math.min(maxChunkRows, Math.floor(cellBudget / names.length)));
    const cells = this.chunkRows * this.ncols;
    this.starts = new Int32Array(cells);
    this.ends = new Int32Array(cells);
    this.flags = new Uint8Array(cells);
    return names;
  }

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  /** Reads the next chunk of records into the span buffers; returns how many (0 at the end). */
  nextChunk(): number {
    return this.readRows(0, this.chunkRows);
  }

  /**
   * Reads records into rows [from, upTo) of the current chunk's span buffers (a chunk can be read a
   * block of rows at a time); returns the chunk's row count after it, `from` at the end of the text.
   */
  readRows(from: number, upTo: number): number {
    const s = this.text;
    const len = s.length;
    const ncols = this.ncols;
    const cap = this.chunkRows;
    const starts = this.starts;
    const ends = this.ends;
    const flags = this.flags;
    const delim = this.delim;
    const stopMax = this.stopMax;
    const commentFirst = this.commentFirst;
    let pos = this.pos;
    let row = from;
    while (row < upTo && pos < len) {
      let c = s.charCodeAt(pos);
      if (c === LF || c === CR) {
        // A blank line.
        pos++;
        continue;
      }
      if (c === commentFirst && this.isComment(pos, c)) {
        pos = this.lineEnd(pos);
        continue;
      }
      const recordStart = pos;
      let col = 0;
      for (;;) {
        if (col === ncols) {
          this.pos = pos;
          throw this.error(recordStart, `line %LINE% has more fields than the header's ${ncols}${this.commentHint}`);
        }
        const idx = col * cap + row;
        c = pos < len ? s.charCodeAt(pos) : -1;
        if (c === QUOTE) {
          const open = pos;
          let p = pos + 1;
          let fl = QUOTED;
          for (;;) {
            const q = s.indexOf('"', p);
            if (q < 0) throw this.error(open, 'a quoted field is never closed (its opening quote is on line %LINE%)');
            if (s.charCodeAt(q + 1) === QUOTE) {
              fl = QUOTED | ESCAPED;
              p = q + 2;
              continue;
            }
            starts[idx] = open + 1;
            ends[idx] = q;
            flags[idx] = fl;
            pos = q + 1;
            break;
          }
          c = pos < len ? s.charCodeAt(pos) : -1;
          if (c !== delim && c !== LF && c !== CR && c !== -1) {
            throw this.error(pos, 'unexpected character after a closing quote on line %LINE% (a quote inside a quoted field must be doubled)');
          }
        } else {
          const start = pos;
          while (pos < len) {
            c = s.charCodeAt(pos);
            // One comparison for most characters (every stop is ≤ stopMax).
            if (c <= stopMax && (c === delim || c === LF || c === CR)) break;
            pos++;
          }
          if (pos >= len) c = -1;
          starts[idx] = start;
          ends[idx] = pos;
          flags[idx] = 0;
        }
        col++;
        if (c === delim) {
          pos++;
          continue;
        }
        if (c === CR) {
          pos++;
          if (pos < len && s.charCodeAt(pos) === LF) pos++;
        } else if (c === LF) {
          pos++;
        }
        break;
      }
      if (col !== ncols) {
        if (!this.padShortRows) {
          this.pos = pos;
          throw this.error(
            recordStart,
            `line %LINE% has ${col} field${col === 1 ? '' : 's'}, but the header has ${ncols} (pass { padShortRows: true } to read missing fields as nulls)`,
          );
        }
        // Missing fields are empty cells: nulls.
        for (; col < ncols; col++) {
          const idx = col * cap + row;
          starts[idx] = pos;
          ends[idx] = pos;
          flags[idx] = 0;
        }
      }
      row++;
    }
    this.pos = pos;
    this.rowsBefore += row - from;
    return row;
  }

  /** The text of a cell, unescaped. */
  cellText(idx: number): string {
    const raw = this.text.slice(this.starts[idx]!, this.ends[idx]!);
    return this.flags[idx]! & ESCAPED ? raw.replaceAll('""', '"') : raw;
  }

  /** A syntax error; `%LINE%` in the message becomes the 1-based line of `at` (counted only now). */
  private error(at: number, message: string): ConversionInputError {
    const s = this.text;
    let line = 1;
    for (let i = s.indexOf('\n'); i >= 0 && i < at; i = s.indexOf('\n', i + 1)) line++;
    return new ConversionInputError(`malformed CSV: ${message.replace('%LINE%', String(line))}`);
  }
}
