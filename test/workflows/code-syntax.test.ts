/**
 * The create-time syntax check of node code (src/workflows/code-syntax.ts): it wraps the code as the
 * runner does, so top-level `await` and `return` parse, and reports the line and column in the user's code.
 */
import t from 'tap';
import { wrapUserCode } from '../../runner/sandbox/user-stack.js';
import { codeSyntaxError, NODE_CODE_PREFIX, NODE_CODE_SUFFIX } from '../../src/workflows/code-syntax.js';

t.test('the code is wrapped exactly as the runner wraps it', async (t) => {
  t.equal(NODE_CODE_PREFIX + 'CODE' + NODE_CODE_SUFFIX, wrapUserCode('CODE'));
});

t.test('a function body with top-level await and return parses', async (t) => {
  for (const code of [
    'return 1',
    'const r = await ld.request({ url: data.input.url });\nreturn r.body;',
    'if (data.input.x) return { a: 1 };\nfor await (const x of []) {}\nreturn null',
    '// only a comment, then\nreturn `a` + "b"',
  ]) {
    t.equal(codeSyntaxError(code), undefined, JSON.stringify(code));
  }
});

t.test('a syntax error is reported with its line and column in the user code', async (t) => {
  t.same(codeSyntaxError('return 1 +;'), { line: 1, column: 11, message: "Unexpected token ';'" }, 'line 1: the wrapper prefix is not counted');
  t.same(codeSyntaxError('const a = 1;\nlet x = {\n  b: 2,,\n};\nreturn x'), { line: 3, column: 8, message: "Unexpected token ','" });
  t.same(
    codeSyntaxError('function f() {\n  return 1 + ;\n}\nreturn f()'),
    { line: 2, column: 14, message: "Unexpected token ';'" },
    'inside a nested function',
  );
  t.same(codeSyntaxError('let a;\nlet a;'), { line: 2, column: 5, message: "Identifier 'a' has already been declared" }, 'an early error');
  t.same(codeSyntaxError('return {\n  a: 1'), { line: 2, column: 7, message: "Unexpected token ')'" }, 'cut short: the end of the code');
  t.same(codeSyntaxError('return `abc'), { line: 1, column: 12, message: 'Unexpected end of input' }, 'unterminated: the end of the code');
});

t.test('the code is only parsed, never run', async (t) => {
  const g = globalThis as { ranByTheCheck?: boolean };
  t.equal(codeSyntaxError('globalThis.ranByTheCheck = true; return 1'), undefined);
  t.equal(g.ranByTheCheck, undefined);
});
