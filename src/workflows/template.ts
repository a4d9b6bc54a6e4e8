/**
 * Templates in a code node's `input` (spec: "Webhook trigger output"; docs/design.md, executor).
 *
 * Syntax, inside any string value of the input (object keys are never templates):
 *
 * - `{{ path }}`: whitespace inside the braces is allowed. A path starts at one of the roots
 *   `trigger.output` (then `body`, `query`, `headers` or `method`) or `nodes.<node id>.output`, the result
 *   of an earlier node. Header names are lower case (`trigger.output.headers.x-github-event`: `-` is a
 *   plain segment character); an upper-case one is refused, since it could never match.
 * - Segments are separated by dots (`body.user.name`). A segment is any run of characters other than
 *   whitespace and `. [ ] { } " \`; any other key is written quoted in brackets, as a JSON string
 *   (`body["content-type"]`, `body["a.b"]`). Array items are reached by number: `items.0.id` or
 *   `items[0].id`.
 * - A string that is exactly one template (nothing around the braces) is replaced by the referenced value
 *   with its JSON type: object, array, number, boolean, null or string.
 * - A template inside other text is interpolated: a string as it is, any other value as JSON.
 * - A backslash before `{{` makes it literal: `\{{` renders `{{`. Backslashes right before `{{` pair up,
 *   so `\\{{x}}` renders one backslash and then the value of `x`. Backslashes elsewhere are plain text.
 *
 * Lookups only ever read own data properties of objects and in-range indices of arrays, so `__proto__`,
 * `constructor` and `prototype` reach a field of that name when the data has one and are a missing path
 * otherwise: never a prototype. A missing path is a {@link TemplateError} naming the template and the
 * missing segment. The rendered value is bounded in size (JSON bytes), checked while it is built.
 *
 * Tests: test/workflows/template-render.test.ts, test/workflows/template-validate.test.ts.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';

/** Stable codes of {@link TemplateError}; tests and callers compare these, not the prose. */
export type TemplateErrorCode =
  /** The text between `{{` and `}}` is not a path, or `}}` is missing. */
  | 'TEMPLATE_SYNTAX'
  /** The path does not start at `trigger.output.body|query|headers|method` or `nodes.<id>.output`. */
  | 'TEMPLATE_UNKNOWN_ROOT'
  /** `nodes.<id>` names a node that does not run before this one (create-time check). */
  | 'TEMPLATE_UNKNOWN_NODE'
  /** The data has nothing at the path (render time). */
  | 'TEMPLATE_MISSING_PATH'
  /** The rendered value is over the size limit, or a referenced value is nested too deeply to copy. */
  | 'TEMPLATE_TOO_LARGE';

/**
 * A template that cannot be parsed or rendered. `message` is `<template>: <detail>`, e.g.
 * `{{trigger.output.body.a.b}}: trigger.output.body.a has no field "b"`; `field` says where in the
 * rendered value the template sits (`input.greeting`, `input.items[0]`), so a caller can prefix it.
 */
export class TemplateError extends Error {
  override readonly name = 'TemplateError';
  /** The template's text as written, from `{{` to `}}` (shortened when long); empty when none applies. */
  readonly template: string;
  /** What is wrong, without the template. */
  readonly detail: string;
  /** Where the template is, as a path from the rendered value's root (with the caller's prefix). */
  readonly field: string;

  constructor(
    readonly code: TemplateErrorCode,
    template: string,
    detail: string,
    field: string,
  ) {
    super(template === '' ? detail : `${template}: ${detail}`);
    this.template = template;
    this.detail = detail;
    this.field = field;
  }
}

/** True when `err` is a {@link TemplateError}. */
export function isTemplateError(err: unknown): err is TemplateError {
  return err instanceof TemplateError;
}

/** A parsed `{{ path }}`. */
export interface TemplateRef {
  /** The template as written, `{{` to `}}`. */
  readonly source: string;
  /** The path's segments, e.g. `['trigger', 'output', 'body', 'items', '0']`. */
  readonly path: readonly string[];
}

/** A string value cut into literal text and templates. */
export type TemplatePiece = string | TemplateRef;

/** What a node's templates can read. */
export interface TemplateContext {
  trigger: { output: { body: JsonValue; query: JsonValue; headers?: Readonly<Record<string, string>>; method?: string } };
  /** The outputs of the nodes that ran before, by node id. */
  nodes: Readonly<Record<string, { output: JsonValue }>>;
}

export interface RenderOptions {
  /** Largest rendered value, in bytes of its JSON. Default {@link DEFAULT_MAX_RENDERED_BYTES}. */
  maxOutputBytes?: number;
  /** Prefix of {@link TemplateError.field}, e.g. `input`. Default: none. */
  field?: string;
}

export interface ValidateOptions {
  /** Ids of the nodes that run before the one whose input this is; `nodes.<id>` must name one of them. */
  earlierNodeIds?: Iterable<string>;
  /** Prefix of {@link TemplateError.field}, e.g. `nodes[1].input`. Default: none. */
  field?: string;
}

/** Default bound of a rendered input: 4 MiB of JSON, the runner's default limit of `input` + `auth`. */
export const DEFAULT_MAX_RENDERED_BYTES = 4 * 1024 * 1024;

/** Characters a segment may hold when written after a dot; others need `["..."]`. */
const PLAIN_SEGMENT = /^[^\s.[\]{}"\\]+$/u;
const PLAIN_CHAR = /[^\s.[\]{}"\\]/u;
const INDEX = /^(?:0|[1-9][0-9]*)$/;
const MAX_SOURCE_CHARS = 100;

/**
 * Writes a path as templates and messages show it: plain segments after dots, numbers (array positions
 * while walking an input) as `[n]`, any other key as `["..."]`. `prefix` is written first.
 */
export function formatPath(segments: readonly (string | number)[], prefix = ''): string {
  let out = prefix;
  for (const seg of segments) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (PLAIN_SEGMENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

/** Shortens a template's text for messages. */
function shorten(source: string): string {
  return source.length <= MAX_SOURCE_CHARS ? source : `${source.slice(0, MAX_SOURCE_CHARS - 1)}…`;
}

/** The text of the template that starts at `start`, up to its `}}` (or the end), for a syntax error. */
function sourceFrom(s: string, start: number): string {
  const close = s.indexOf('}}', start + 2);
  return shorten(close === -1 ? s.slice(start) : s.slice(start, close + 2));
}

function isWhitespace(c: string | undefined): boolean {
  return c !== undefined && /\s/u.test(c);
}

/** Quotes one character (or the end) for a syntax message. */
function found(c: string | undefined): string {
  return c === undefined ? 'the end of the text' : JSON.stringify(c);
}

/**
 * Parses one `{{ ... }}` starting at `start` (which points at `{{`). Returns the reference and the index
 * after its `}}`. Throws TEMPLATE_SYNTAX / TEMPLATE_UNKNOWN_ROOT errors with an empty `field`.
 */
function parseRef(s: string, start: number): { ref: TemplateRef; end: number } {
  const syntax = (detail: string): TemplateError => new TemplateError('TEMPLATE_SYNTAX', sourceFrom(s, start), detail, '');
  if (s.indexOf('}}', start + 2) === -1) throw syntax('unclosed template: "}}" is missing');
  let p = start + 2;
  while (isWhitespace(s[p])) p++;
  if (s.startsWith('}}', p)) throw syntax('empty template');

  const path: string[] = [];
  const readPlain = (): string => {
    const from = p;
    // Iterate by code point so that a character outside the BMP is taken whole.
    while (p < s.length) {
      const c = String.fromCodePoint(s.codePointAt(p)!);
      if (!PLAIN_CHAR.test(c)) break;
      p += c.length;
    }
    return s.slice(from, p);
  };

  const first = readPlain();
  if (first === '') throw syntax(`expected a field name after "{{", found ${found(s[p])}`);
  path.push(first);
  for (;;) {
    const c = s[p];
    if (c === '.') {
      p++;
      const seg = readPlain();
      if (seg === '') throw syntax(`expected a field name after ${JSON.stringify(`${formatPath(path)}.`)}, found ${found(s[p])}`);
      path.push(seg);
    } else if (c === '[') {
      const before = `${formatPath(path)}[`;
      p++;
      let seg: string;
      if (s[p] !== undefined && s[p]! >= '0' && s[p]! <= '9') {
        const from = p;
        while (s[p] !== undefined && s[p]! >= '0' && s[p]! <= '9') p++;
        seg = s.slice(from, p);
        if (!INDEX.test(seg)) throw syntax(`${JSON.stringify(`${before}${seg}]`)} is not an index: write it without leading zeros`);
      } else if (s[p] === '"') {
        const from = p;
        p++;
        while (p < s.length && s[p] !== '"') p += s[p] === '\\' ? 2 : 1;
        if (p >= s.length) throw syntax(`unterminated quoted key after ${JSON.stringify(before)}`);
        p++;
        let parsed: unknown;
        try {
          parsed = JSON.parse(s.slice(from, p));
        } catch {
          parsed = undefined;
        }
        if (typeof parsed !== 'string') throw syntax(`invalid quoted key after ${JSON.stringify(before)}: write it as a JSON string`);
        seg = parsed;
      } else {
        throw syntax(`expected a number or a quoted key after ${JSON.stringify(before)}, found ${found(s[p])}`);
      }
      if (s[p] !== ']') throw syntax(`expected "]" after ${JSON.stringify(formatPathBracket(path, seg))}, found ${found(s[p])}`);
      p++;
      path.push(seg);
    } else {
      break;
    }
  }
  while (isWhitespace(s[p])) p++;
  if (!s.startsWith('}}', p)) {
    throw syntax(`unexpected ${found(s[p])} after ${JSON.stringify(formatPath(path))}: a template holds one path`);
  }
  const end = p + 2;
  const ref: TemplateRef = { source: shorten(s.slice(start, end)), path };
  checkRoot(ref);
  return { ref, end };
}

/** `a[0` or `a["k"` as written, for the "expected ]" message. */
function formatPathBracket(path: readonly string[], seg: string): string {
  return `${formatPath(path)}[${INDEX.test(seg) ? seg : JSON.stringify(seg)}`;
}

/** The fields of `trigger.output`. */
const TRIGGER_FIELDS = ['body', 'query', 'headers', 'method'];

/** Refuses a path that does not start at `trigger.output[.body|.query|.headers|.method]` or `nodes.<id>.output`. */
function checkRoot(ref: TemplateRef): void {
  const [root, second, third, fourth] = ref.path;
  const bad = (detail: string): TemplateError => new TemplateError('TEMPLATE_UNKNOWN_ROOT', ref.source, detail, '');
  if (root === 'trigger') {
    if (second !== 'output') throw bad('trigger has only "output": use trigger.output.body or trigger.output.query');
    if (third !== undefined && !TRIGGER_FIELDS.includes(third)) {
      throw bad(`trigger.output has no field ${JSON.stringify(third)}: it has only "body", "query", "headers" and "method"`);
    }
    if (third === 'headers' && fourth !== undefined && fourth !== fourth.toLowerCase()) {
      throw new TemplateError(
        'TEMPLATE_SYNTAX',
        ref.source,
        `header names are lower case in trigger.output.headers: write ${formatPath(['trigger', 'output', 'headers', fourth.toLowerCase()])}`,
        '',
      );
    }
    if (third === 'method' && fourth !== undefined) throw bad('trigger.output.method is a string: it has no fields');
  } else if (root === 'nodes') {
    if (second === undefined) throw bad('use nodes.<node id>.output');
    if (third !== 'output') {
      const node = formatPath(['nodes', second]);
      throw bad(`${node} has only "output": use ${node}.output`);
    }
  } else {
    throw bad(`unknown root ${JSON.stringify(root)}: a template starts with trigger.output or nodes.<node id>.output`);
  }
}

/**
 * Cuts a string into literal text and templates, resolving `\{{` escapes. A string without templates
 * gives one text piece (`''` for the empty string). Throws a {@link TemplateError} (with an empty
 * `field`) on bad syntax or an unknown root.
 */
export function parseTemplateString(s: string): TemplatePiece[] {
  const pieces: TemplatePiece[] = [];
  let text = '';
  let i = 0;
  for (;;) {
    const j = s.indexOf('{{', i);
    if (j === -1) {
      text += s.slice(i);
      break;
    }
    let k = j;
    while (k > i && s.charCodeAt(k - 1) === 0x5c) k--;
    const slashes = j - k;
    text += s.slice(i, k) + '\\'.repeat(slashes >> 1);
    if (slashes % 2 === 1) {
      text += '{{';
      i = j + 2;
      continue;
    }
    if (text !== '') pieces.push(text);
    text = '';
    const { ref, end } = parseRef(s, j);
    pieces.push(ref);
    i = end;
  }
  if (text !== '' || pieces.length === 0) pieces.push(text);
  return pieces;
}

/** Re-throws `err` with `field` set, when it is a TemplateError without one. */
function withField(err: unknown, field: string): unknown {
  if (err instanceof TemplateError && err.field === '' && field !== '') {
    return new TemplateError(err.code, err.template, err.detail, field);
  }
  return err;
}

/**
 * Checks every template in `value` (a node's input) without data: syntax, roots, and — when
 * `earlierNodeIds` is given — that `nodes.<id>` names a node that runs before. Returns every problem,
 * in walk order (empty when all is well).
 */
export function validateTemplates(value: JsonValue, options: ValidateOptions = {}): TemplateError[] {
  const earlier = options.earlierNodeIds === undefined ? undefined : new Set(options.earlierNodeIds);
  const prefix = options.field ?? '';
  const errors: TemplateError[] = [];
  const where: (string | number)[] = [];
  const visit = (v: JsonValue): void => {
    if (typeof v === 'string') {
      if (!v.includes('{{')) return;
      const field = formatPath(where, prefix);
      let pieces: TemplatePiece[];
      try {
        pieces = parseTemplateString(v);
      } catch (err) {
        errors.push(withField(err, field) as TemplateError);
        return;
      }
      for (const piece of pieces) {
        if (typeof piece === 'string' || piece.path[0] !== 'nodes' || earlier === undefined) continue;
        const id = piece.path[1]!;
        if (!earlier.has(id)) {
          errors.push(new TemplateError('TEMPLATE_UNKNOWN_NODE', piece.source, `node ${JSON.stringify(id)} does not run before this node`, field));
        }
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, n) => {
        where.push(n);
        visit(item);
        where.pop();
      });
    } else if (v !== null && typeof v === 'object') {
      for (const key of Object.keys(v)) {
        where.push(key);
        visit((v as JsonObject)[key] as JsonValue);
        where.pop();
      }
    }
  };
  visit(value);
  return errors;
}

/** A resolved reference: the value and, once needed, its JSON. */
interface Resolved {
  value: JsonValue;
  json: string | undefined;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'number') return 'a number';
  if (typeof v === 'boolean') return 'a boolean';
  return `a ${typeof v}`;
}

function jsonBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s), 'utf8');
}

/** Defines `key` as an own data property, so that `__proto__` stays data instead of a prototype change. */
function defineOwn(o: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

class Renderer {
  private used = 0;
  private readonly cache = new Map<string, Resolved>();
  private readonly where: (string | number)[] = [];
  private readonly root: JsonObject;

  constructor(
    context: TemplateContext,
    private readonly maxBytes: number,
    private readonly prefix: string,
  ) {
    this.root = Object.create(null) as JsonObject;
    defineOwn(this.root, 'trigger', context.trigger as unknown as JsonValue);
    defineOwn(this.root, 'nodes', context.nodes as unknown as JsonValue);
  }

  private field(): string {
    return formatPath(this.where, this.prefix);
  }

  private charge(n: number, template: string): void {
    this.used += n;
    if (this.used > this.maxBytes) {
      throw new TemplateError('TEMPLATE_TOO_LARGE', template, `the rendered value is over the limit of ${this.maxBytes} bytes of JSON`, this.field());
    }
  }

  render(v: JsonValue): JsonValue {
    if (typeof v === 'string') return this.renderString(v);
    if (typeof v === 'number' || typeof v === 'boolean' || v === null) {
      this.charge(JSON.stringify(v).length, '');
      return v;
    }
    if (Array.isArray(v)) {
      this.charge(2 + Math.max(0, v.length - 1), '');
      const out: JsonValue[] = [];
      for (let n = 0; n < v.length; n++) {
        this.where.push(n);
        out.push(this.render(v[n] as JsonValue));
        this.where.pop();
      }
      return out;
    }
    if (typeof v === 'object') {
      const keys = Object.keys(v);
      this.charge(2 + Math.max(0, keys.length - 1), '');
      const out: JsonObject = {};
      for (const key of keys) {
        this.charge(jsonBytes(key) + 1, '');
        this.where.push(key);
        defineOwn(out, key, this.render(v[key] as JsonValue));
        this.where.pop();
      }
      return out;
    }
    throw new TypeError(`${this.field() || 'the value'} is not a JSON value (${typeof v})`);
  }

  private renderString(s: string): JsonValue {
    if (!s.includes('{{')) {
      this.charge(jsonBytes(s), '');
      return s;
    }
    let pieces: TemplatePiece[];
    try {
      pieces = parseTemplateString(s);
    } catch (err) {
      throw withField(err, this.field());
    }
    const only = pieces[0];
    if (pieces.length === 1 && only !== undefined && typeof only !== 'string') {
      const r = this.resolve(only);
      const json = this.json(r, only);
      this.charge(Buffer.byteLength(json, 'utf8'), only.source);
      return typeof r.value === 'object' && r.value !== null ? (JSON.parse(json) as JsonValue) : r.value;
    }
    this.charge(2, '');
    let out = '';
    for (const piece of pieces) {
      let text: string;
      let template = '';
      if (typeof piece === 'string') {
        text = piece;
      } else {
        const r = this.resolve(piece);
        text = typeof r.value === 'string' ? r.value : this.json(r, piece);
        template = piece.source;
      }
      this.charge(jsonBytes(text) - 2, template);
      out += text;
    }
    return out;
  }

  private json(r: Resolved, ref: TemplateRef): string {
    if (r.json === undefined) {
      try {
        r.json = JSON.stringify(r.value);
      } catch (err) {
        if (!(err instanceof RangeError)) throw err;
        throw new TemplateError('TEMPLATE_TOO_LARGE', ref.source, `${formatPath(ref.path)} is nested too deeply to render`, this.field());
      }
    }
    return r.json;
  }

  private resolve(ref: TemplateRef): Resolved {
    const key = ref.path.join('\u0000');
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const missing = (detail: string): TemplateError => new TemplateError('TEMPLATE_MISSING_PATH', ref.source, detail, this.field());
    let cur: unknown = this.root;
    for (let i = 0; i < ref.path.length; i++) {
      const seg = ref.path[i]!;
      const at = formatPath(ref.path.slice(0, i));
      if (Array.isArray(cur)) {
        if (!INDEX.test(seg)) throw missing(`${at} is an array: ${JSON.stringify(seg)} is not an index`);
        const n = Number(seg);
        if (n >= cur.length) throw missing(`${at} has no index ${seg} (length ${cur.length})`);
        cur = cur[n];
      } else if (cur !== null && typeof cur === 'object') {
        const d = Object.getOwnPropertyDescriptor(cur, seg);
        if (d === undefined || !('value' in d) || d.value === undefined) {
          if (i === 1 && ref.path[0] === 'nodes') throw missing(`node ${JSON.stringify(seg)} has no output: it did not run before this node`);
          throw missing(`${at} has no field ${JSON.stringify(seg)}`);
        }
        cur = d.value;
      } else {
        throw missing(`${at} is ${describe(cur)}: it has no field ${JSON.stringify(seg)}`);
      }
    }
    if (cur === undefined || typeof cur === 'function' || typeof cur === 'symbol' || typeof cur === 'bigint') {
      throw missing(`${formatPath(ref.path)} is not a JSON value`);
    }
    const r: Resolved = { value: cur as JsonValue, json: undefined };
    this.cache.set(key, r);
    return r;
  }
}

/**
 * Renders every template in `value` against `context` and returns a new value (`value` is not changed;
 * referenced objects are copied, never shared). Throws a {@link TemplateError} for bad syntax, an unknown
 * root, a missing path (TEMPLATE_MISSING_PATH) or a result over `maxOutputBytes` (TEMPLATE_TOO_LARGE).
 */
export function renderTemplates(value: JsonValue, context: TemplateContext, options: RenderOptions = {}): JsonValue {
  const max = options.maxOutputBytes ?? DEFAULT_MAX_RENDERED_BYTES;
  return new Renderer(context, max, options.field ?? '').render(value);
}
