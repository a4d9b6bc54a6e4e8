/**
 * Messages that teach: the common mistakes of integration code (a misspelt built-in, `console.log`,
 * `fetch`, `setTimeout`, `require`, `import`) fail with QuickJS's bare messages ("not a function",
 * "'console' is not defined"). The error that ends a call is rewritten here, on the host, into one that
 * says what to use instead. Nothing is added to the realm: the spec allows only the listed globals, and
 * the realm each call starts from stays byte-identical (test/runner/error-hints.test.ts).
 */
import { INSTEAD, NO_MODULES } from '../../src/guest/left-out-globals.js';

/** What the guest offers, to suggest the closest name: `ld.*` names and the sandbox's own globals. */
export interface SandboxNames {
  ld: readonly string[];
  globals: readonly string[];
}

/** Words that may stand right before a call expression (`return f(`, `await ld.wait(`). */
const KEYWORDS_BEFORE_A_CALL = new Set(['return', 'await', 'typeof', 'void', 'yield', 'throw', 'case', 'in', 'of', 'else', 'do', 'delete']);

/**
 * The message to report for an error that ended a call, or `message` itself when there is nothing to
 * add. `stack` is the user's stack (user-stack.ts: frames in the user's own lines and columns).
 */
export function teachingMessage(name: string, message: string, stack: string, code: string, names: SandboxNames): string {
  if (name === 'ReferenceError') {
    const undefinedName = /^'([A-Za-z_$][\w$]*)' is not defined$/.exec(message)?.[1];
    if (undefinedName !== undefined) {
      const instead = INSTEAD[undefinedName];
      if (instead !== undefined) return `${undefinedName} is not available in the sandbox: ${instead}`;
      const near = closest(undefinedName, names.globals);
      return near === undefined ? message : `${message} — did you mean ${near}?`;
    }
    const module = /^could not load module '(.*)'$/s.exec(message)?.[1];
    if (module !== undefined) return `import('${module}') is not available in the sandbox: ${NO_MODULES}`;
    return message;
  }
  if (name === 'SyntaxError') {
    const at = firstPosition(stack);
    const line = at === undefined ? undefined : code.split('\n')[at.line - 1];
    if (line !== undefined && /^\s*(?:import\s*[\w${*'"]|export\b)/.test(line)) {
      const keyword = /^\s*(import|export)/.exec(line)![1];
      return `${keyword} statements are not available in the sandbox: ${NO_MODULES} (${message})`;
    }
    return message;
  }
  if (name === 'TypeError' && message === 'not a function') {
    const at = firstPosition(stack);
    if (at?.column === undefined) return message;
    const callee = calleeBefore(code, at.line, at.column);
    if (callee === undefined) return message;
    const member = /^ld\s*\??\.\s*([A-Za-z_$][\w$]*)$/.exec(callee)?.[1];
    if (member !== undefined && !names.ld.includes(member)) {
      const near = closest(member, names.ld);
      if (near !== undefined) return `ld.${member} is not a function — did you mean ld.${near}?`;
      return `ld.${member} is not a function: the built-ins are ${names.ld.map((n) => `ld.${n}`).join(', ')}`;
    }
    return `${callee} is not a function`;
  }
  return message;
}

/** The line and column of the first frame of a user stack. */
function firstPosition(stack: string): { line: number; column: number | undefined } | undefined {
  const m = /user\.js:(\d+)(?::(\d+))?/.exec(stack);
  if (!m) return undefined;
  return { line: Number(m[1]), column: m[2] === undefined ? undefined : Number(m[2]) };
}

/**
 * The callee of the call whose `(` is at `line:column` (1-based), when it is a plain chain of names
 * (`ld.requst`, `o.fn`, `f`): QuickJS places "not a function" at the call's opening parenthesis.
 */
function calleeBefore(code: string, line: number, column: number): string | undefined {
  const text = code.split('\n')[line - 1];
  if (text === undefined || text[column - 1] !== '(') return undefined;
  const m = /([A-Za-z_$][\w$]*(?:\s*\??\.\s*[A-Za-z_$][\w$]*)*)\s*$/.exec(text.slice(0, column - 1));
  if (!m) return undefined;
  const callee = m[1]!;
  // `new X(` and `function f(` are not calls of a value that is not a function.
  const before = text.slice(0, m.index);
  if (/(?:\bnew|\bfunction\*?|[.\]])\s*$/.test(before)) return undefined;
  const word = /([\w$]+)\s*$/.exec(before)?.[1];
  if (word !== undefined && !KEYWORDS_BEFORE_A_CALL.has(word)) return undefined;
  return callee.replace(/\s+/g, '');
}

/** The candidate within a small edit distance of `name` (about one typo per four letters), if one is closest. */
export function closest(name: string, candidates: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(name.length / 4));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** Damerau–Levenshtein distance (optimal string alignment): a swap of two letters counts as one edit. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}
