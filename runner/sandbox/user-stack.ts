/**
 * Stack traces in user terms. QuickJS frames look like `    at fn (user.js:3:7)`, or `    at user.js:3:7`
 * for a syntax error. Only frames in the user's own lines are kept (no prelude, no host bridge, no native
 * frames, not the wrapper's closing line), so a stack never shows the runner's internals. Line numbers
 * are the user's own: the wrapper adds nothing before line 1 but `USER_CODE_PREFIX` on the same line,
 * whose length is taken off line 1's columns.
 */
export const USER_FILE = 'user.js';
export const USER_CODE_PREFIX = '(async () => {';
export const USER_CODE_SUFFIX = '\n})()';

const FRAME = /^\s*at (?:(.*?) \()?user\.js:(\d+)(?::(\d+))?\)?\s*$/;
const MAX_FRAMES = 20;

/** The user's body as one async arrow function, so that `return` and `await` work at its top level. */
export function wrapUserCode(code: string): string {
  return USER_CODE_PREFIX + code + USER_CODE_SUFFIX;
}

export function countLines(code: string): number {
  let n = 1;
  for (let i = code.indexOf('\n'); i !== -1; i = code.indexOf('\n', i + 1)) n++;
  return n;
}

/** Keeps the user's frames, with their own positions; a run of identical frames (recursion) is folded. */
export function userStack(stack: string, userLines: number): string {
  const out: string[] = [];
  let repeats = 0;
  for (const line of stack.split('\n')) {
    const m = FRAME.exec(line);
    if (!m) continue;
    const lineNo = Number(m[2]);
    if (lineNo > userLines) continue;
    let col = m[3] === undefined ? undefined : Number(m[3]);
    if (lineNo === 1 && col !== undefined) col = Math.max(1, col - USER_CODE_PREFIX.length);
    const where = `${USER_FILE}:${lineNo}${col === undefined ? '' : `:${col}`}`;
    const frame = m[1] === undefined ? `    at ${where}` : `    at ${m[1]} (${where})`;
    if (out[out.length - 1] === frame) {
      repeats++;
      continue;
    }
    if (repeats > 0) out.push(`    ... the frame above repeated ${repeats} more times`);
    repeats = 0;
    if (out.length >= MAX_FRAMES) break;
    out.push(frame);
  }
  if (repeats > 0) out.push(`    ... the frame above repeated ${repeats} more times`);
  return out.join('\n');
}
