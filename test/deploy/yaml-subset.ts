/**
 * A strict reader of the YAML the deployment files use (compose.yaml, kubernetes.yaml, the NATS chart
 * values in the README), so that the test that checks them needs no YAML library (the one in
 * node_modules is only a dependency of tap's).
 *
 * What it reads: documents split by `---`; block mappings and block sequences (also `- key: value`
 * items and a sequence under a key at the key's indentation); plain, single- and double-quoted scalars
 * (plain ones typed as YAML 1.2's core schema does: null, booleans, integers, floats, else strings);
 * flow sequences of scalars (`[a, "b, c"]`) and the empty `[]` and `{}`; block scalars (`|`, `|-`,
 * `>`, `>-`); anchors on a scalar or a block, aliases, and merge keys (`<<: *anchor`, explicit keys win);
 * `#` comments. Anything else (tags, directives, complex keys, flow mappings with content, nested flow
 * collections, plain scalars spread over lines, tabs in indentation, duplicate keys) is refused with an
 * error naming the line, never read as something else.
 *
 * Tests: test/deploy/yaml-subset.test.ts.
 */

export class YamlSubsetError extends Error {
  override readonly name = 'YamlSubsetError';
}

interface Line {
  /** 1-based, for messages. */
  no: number;
  indent: number;
  /** The line after its indentation, comments not yet removed. */
  text: string;
}

type Node = unknown;

/** Every document of `text`, in order; empty documents (only comments) are left out. */
export function parseYamlDocuments(text: string): Node[] {
  const docs: Line[][] = [[]];
  text.split(/\r?\n/).forEach((raw, i) => {
    const no = i + 1;
    if (/^---\s*(#.*)?$/.test(raw)) {
      docs.push([]);
      return;
    }
    if (/^(%|\.\.\.)/.test(raw)) throw new YamlSubsetError(`line ${no}: directives and document end markers are not read`);
    const indent = raw.length - raw.trimStart().length;
    if (/^ *\t/.test(raw)) throw new YamlSubsetError(`line ${no}: a tab in the indentation`);
    docs[docs.length - 1]!.push({ no, indent, text: raw.slice(indent) });
  });
  const out: Node[] = [];
  for (const lines of docs) {
    const parser = new Parser(lines);
    const value = parser.document();
    if (value !== undefined) out.push(value);
  }
  return out;
}

/** The one document of `text`. */
export function parseYaml(text: string): Node {
  const docs = parseYamlDocuments(text);
  if (docs.length !== 1) throw new YamlSubsetError(`expected one document, found ${docs.length}`);
  return docs[0];
}

/** `text` without its comment: a `#` at the start or after a blank, outside quotes. */
export function stripComment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === '"') {
      if (c === '\\') i++;
      else if (c === '"') quote = undefined;
    } else if (quote === "'") {
      if (c === "'" && text[i + 1] === "'") i++;
      else if (c === "'") quote = undefined;
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s[,:-]/.test(text[i - 1]!))) {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      return text.slice(0, i).trimEnd();
    }
  }
  if (quote !== undefined) throw new YamlSubsetError(`an unterminated ${quote === '"' ? 'double' : 'single'}-quoted scalar`);
  return text.trimEnd();
}

/** Index of the `:` that ends a mapping key (followed by a blank or the end, outside quotes and brackets), or -1. */
function keyColon(text: string): number {
  let quote: string | undefined;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === '"') {
      if (c === '\\') i++;
      else if (c === '"') quote = undefined;
    } else if (quote === "'") {
      if (c === "'" && text[i + 1] === "'") i++;
      else if (c === "'") quote = undefined;
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s[,]/.test(text[i - 1]!))) quote = c;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ':' && depth === 0 && (i + 1 === text.length || text[i + 1] === ' ')) return i;
  }
  return -1;
}

const isSeqItem = (text: string) => text === '-' || text.startsWith('- ');

class Parser {
  #i = 0;
  readonly #anchors = new Map<string, Node>();

  constructor(private readonly lines: Line[]) {}

  document(): Node {
    const first = this.#peek();
    if (first === undefined) return undefined;
    if (first.indent !== 0) throw this.#error(first, 'a document must start at column 1');
    const value = this.#block(0);
    const rest = this.#peek();
    if (rest !== undefined) throw this.#error(rest, 'unexpected indentation or content after the document');
    return value;
  }

  /** The next line with content (comments and blank lines skipped), without consuming it. */
  #peek(): Line | undefined {
    while (this.#i < this.lines.length) {
      const l = this.lines[this.#i]!;
      if (stripComment(l.text) !== '') return l;
      this.#i++;
    }
    return undefined;
  }

  #error(line: Line, message: string): YamlSubsetError {
    return new YamlSubsetError(`line ${line.no}: ${message}`);
  }

  /** A block mapping or sequence whose lines are indented exactly `indent`. */
  #block(indent: number): Node {
    const l = this.#peek()!;
    return isSeqItem(stripComment(l.text)) ? this.#sequence(indent) : this.#mapping(indent);
  }

  #mapping(indent: number): Record<string, Node> {
    const out: Record<string, Node> = {};
    const merged: Record<string, Node>[] = [];
    for (let l = this.#peek(); l !== undefined && l.indent === indent; l = this.#peek()) {
      const text = stripComment(l.text);
      if (isSeqItem(text)) throw this.#error(l, 'a sequence item where a mapping key was expected');
      if (text.startsWith('? ')) throw this.#error(l, 'complex keys are not read');
      const colon = keyColon(text);
      if (colon <= 0) throw this.#error(l, `expected "key: value", got ${JSON.stringify(text)}`);
      const key = this.#key(l, text.slice(0, colon).trim());
      if (Object.hasOwn(out, key) || (key === '<<' && merged.length > 0)) throw this.#error(l, `duplicate key ${JSON.stringify(key)}`);
      this.#i++;
      const value = this.#value(l, indent, text.slice(colon + 1).trim(), true);
      if (key === '<<') {
        const sources = Array.isArray(value) ? value : [value];
        for (const s of sources) {
          if (s === null || typeof s !== 'object' || Array.isArray(s)) throw this.#error(l, 'a merge key takes an alias of a mapping');
          merged.push(s as Record<string, Node>);
        }
      } else {
        out[key] = value;
      }
    }
    for (const source of merged) for (const [k, v] of Object.entries(source)) if (!Object.hasOwn(out, k)) out[k] = structuredClone(v);
    return out;
  }

  #sequence(indent: number): Node[] {
    const out: Node[] = [];
    for (let l = this.#peek(); l !== undefined && l.indent === indent; l = this.#peek()) {
      const text = stripComment(l.text);
      if (!isSeqItem(text)) break; // a key after a sequence under a key at the key's indentation
      const rest = text.slice(1).trimStart();
      const inner = indent + (text.length - rest.length);
      if (rest !== '' && (isSeqItem(rest) || (keyColon(rest) > 0 && !/^[&*|>]/.test(rest)))) {
        // `- key: value` or `- - x`: the item is a block that starts on this line, indented past the dash.
        this.lines[this.#i] = { no: l.no, indent: inner, text: rest };
        out.push(this.#block(inner));
      } else {
        this.#i++;
        out.push(this.#value(l, indent, rest, false));
      }
    }
    return out;
  }

  #key(l: Line, raw: string): string {
    if (raw.startsWith('"') || raw.startsWith("'")) {
      const v = this.#scalar(l, raw);
      if (typeof v !== 'string') throw this.#error(l, 'bad quoted key');
      return v;
    }
    if (/^[&*!|>[\]{}]/.test(raw)) throw this.#error(l, `unsupported key ${JSON.stringify(raw)}`);
    return raw;
  }

  /**
   * The value after `key:` or `- ` on line `l` (whose block is at `indent`): inline, a block scalar, or a
   * nested block on the following lines. A sequence under a mapping key may sit at the key's indentation.
   */
  #value(l: Line, indent: number, inline: string, underKey: boolean): Node {
    let anchor: string | undefined;
    const a = /^&([A-Za-z0-9_.-]+)(?:\s+|$)/.exec(inline);
    if (a) {
      anchor = a[1]!;
      inline = inline.slice(a[0].length);
    }
    let value: Node;
    if (inline.startsWith('*')) {
      const name = inline.slice(1);
      if (!this.#anchors.has(name)) throw this.#error(l, `unknown alias *${name}`);
      value = structuredClone(this.#anchors.get(name));
    } else if (/^[|>][-+]?$/.test(inline)) {
      value = this.#blockScalar(indent, inline);
    } else if (inline === '') {
      const next = this.#peek();
      if (next !== undefined && next.indent > indent) value = this.#block(next.indent);
      else if (underKey && next !== undefined && next.indent === indent && isSeqItem(stripComment(next.text))) value = this.#sequence(indent);
      else value = null;
    } else {
      value = this.#scalar(l, inline);
    }
    const next = this.#peek();
    if (inline !== '' && !/^[|>]/.test(inline) && next !== undefined && next.indent > indent) {
      throw this.#error(next, 'a scalar spread over several lines (or unexpected indentation) is not read');
    }
    if (anchor !== undefined) this.#anchors.set(anchor, value);
    return value;
  }

  #blockScalar(indent: number, header: string): string {
    const lines: string[] = [];
    let content: number | undefined;
    while (this.#i < this.lines.length) {
      const l = this.lines[this.#i]!;
      const blank = l.text.trim() === '';
      if (!blank && l.indent <= indent) break;
      if (!blank) content ??= l.indent;
      if (!blank && l.indent < content!) throw this.#error(l, 'a block scalar line less indented than its first');
      lines.push(blank ? '' : ' '.repeat(l.indent - content!) + l.text);
      this.#i++;
    }
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    const body = header.startsWith('>') ? lines.join('\n').replace(/([^\n])\n(?=[^\n ])/g, '$1 ') : lines.join('\n');
    return header.endsWith('-') || lines.length === 0 ? body : `${body}\n`;
  }

  #scalar(l: Line, raw: string): Node {
    if (raw.startsWith('"')) {
      if (!raw.endsWith('"') || raw.length < 2) throw this.#error(l, 'text after a double-quoted scalar');
      try {
        return JSON.parse(raw) as string;
      } catch {
        throw this.#error(l, `a double-quoted scalar with escapes this reader does not know: ${raw}`);
      }
    }
    if (raw.startsWith("'")) {
      if (!/^'(?:[^']|'')*'$/.test(raw)) throw this.#error(l, 'text after a single-quoted scalar');
      return raw.slice(1, -1).replaceAll("''", "'");
    }
    if (raw === '[]') return [];
    if (raw === '{}') return {};
    if (raw.startsWith('[')) {
      if (!raw.endsWith(']')) throw this.#error(l, 'a flow sequence must close on its line');
      return this.#flowItems(l, raw.slice(1, -1)).map((item) => this.#scalar(l, item));
    }
    if (/^[{!%@`&*?]/.test(raw) || /^[|>]/.test(raw)) throw this.#error(l, `unsupported YAML: ${raw}`);
    if (raw.startsWith('- ') || raw === '-') throw this.#error(l, 'unexpected sequence item');
    return plainScalar(raw);
  }

  /** The items of a flow sequence's inside, split at commas outside quotes; nested collections refused. */
  #flowItems(l: Line, inside: string): string[] {
    const items: string[] = [];
    let cur = '';
    let quote: string | undefined;
    for (let i = 0; i < inside.length; i++) {
      const c = inside[i]!;
      if (quote === '"') {
        if (c === '\\') {
          cur += c + (inside[i + 1] ?? '');
          i++;
          continue;
        }
        if (c === '"') quote = undefined;
      } else if (quote === "'") {
        if (c === "'" && inside[i + 1] === "'") {
          cur += "''";
          i++;
          continue;
        }
        if (c === "'") quote = undefined;
      } else if ((c === '"' || c === "'") && cur.trim() === '') quote = c;
      else if (c === '[' || c === ']' || c === '{' || c === '}') throw this.#error(l, 'nested flow collections are not read');
      else if (c === ',') {
        items.push(cur.trim());
        cur = '';
        continue;
      }
      cur += c;
    }
    if (quote !== undefined) throw this.#error(l, 'an unterminated quoted scalar in a flow sequence');
    if (cur.trim() !== '') items.push(cur.trim());
    if (items.some((s) => s === '')) throw this.#error(l, 'an empty item in a flow sequence');
    return items;
  }
}

/** A plain scalar, typed as YAML 1.2's core schema does. */
function plainScalar(raw: string): Node {
  if (/^(null|Null|NULL|~)$/.test(raw)) return null;
  if (/^(true|True|TRUE)$/.test(raw)) return true;
  if (/^(false|False|FALSE)$/.test(raw)) return false;
  if (/^[-+]?[0-9]+$/.test(raw)) return Number(raw);
  if (/^0x[0-9a-fA-F]+$/.test(raw)) return Number.parseInt(raw.slice(2), 16);
  if (/^0o[0-7]+$/.test(raw)) return Number.parseInt(raw.slice(2), 8);
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(raw)) return Number(raw);
  if (/^[-+]?\.(inf|Inf|INF)$/.test(raw)) return raw.startsWith('-') ? -Infinity : Infinity;
  if (/^\.(nan|NaN|NAN)$/.test(raw)) return Number.NaN;
  return raw;
}
