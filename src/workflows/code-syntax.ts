/**
 * The create-time syntax check of a node's code (CreateWorkflow, UpdateWorkflow): code that does not
 * parse is refused with the line and column of the error, instead of failing at the first webhook.
 *
 * The code is a function body that may use top-level `await` and `return`: the runner wraps it in an
 * async arrow function (runner/sandbox/user-stack.ts, `wrapUserCode`), and so does this check, with the
 * same prefix and suffix (test/workflows/code-syntax.test.ts holds them equal). The wrapped source is
 * compiled with `vm.Script`, which parses it (V8's parser reports every early error, in nested functions
 * too) and never runs it; nothing of the runner is needed. V8 and QuickJS both implement ES2023, so what
 * parses here parses in the sandbox; a difference between the two engines shows at run time, as before.
 */
import vm from 'node:vm';

/** What the runner puts before a node's code (`USER_CODE_PREFIX`), on the code's first line. */
export const NODE_CODE_PREFIX = '(async () => {';
/** What the runner puts after it (`USER_CODE_SUFFIX`), on a line of its own. */
export const NODE_CODE_SUFFIX = '\n})()';

const FILE = 'node-code.js';
/** The first lines of V8's SyntaxError stack: `file:LINE`, the source line, a caret line under the error. */
const WHERE = /^node-code\.js:(\d+)\n([^\n]*)\n([ \t]*)\^/;

export interface CodeSyntaxError {
  /** 1-based line in the node's code. */
  line: number;
  /** 1-based column in that line (UTF-16 code units, as editors count). */
  column: number;
  /** The parser's message, e.g. `Unexpected token ','`. */
  message: string;
}

/** The first syntax error of a node's code, or undefined when it parses. */
export function codeSyntaxError(code: string): CodeSyntaxError | undefined {
  try {
    new vm.Script(NODE_CODE_PREFIX + code + NODE_CODE_SUFFIX, { filename: FILE });
    return undefined;
  } catch (err) {
    if (!(err instanceof SyntaxError) && (err as Error)?.name !== 'SyntaxError') throw err;
    return { ...position(code, String((err as Error).stack ?? '')), message: (err as Error).message };
  }
}

/** Where V8's stack puts the error, in the user's terms: line 1 without the prefix, the suffix as the end of the code. */
function position(code: string, stack: string): { line: number; column: number } {
  const lines = code.split('\n');
  const end = { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
  const m = WHERE.exec(stack);
  if (!m) return end;
  const line = Number(m[1]);
  if (line > lines.length) return end; // on the wrapper's closing line: the code ended too early
  let column = m[3]!.length + 1;
  if (line === 1) column = Math.max(1, column - NODE_CODE_PREFIX.length);
  return { line, column };
}
