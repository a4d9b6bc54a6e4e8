/**
 * Template syntax and the create-time check (src/workflows/template.ts, `parseTemplateString`,
 * `validateTemplates`): every syntax error with its exact message, unknown roots, references to nodes
 * that do not run earlier, and where each problem sits.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import t from 'tap';
import { formatPath, parseTemplateString, TemplateError, validateTemplates } from '../../src/workflows/template.js';

function parseError(s: string): TemplateError | undefined {
  try {
    parseTemplateString(s);
  } catch (err) {
    if (err instanceof TemplateError) return err;
    throw err;
  }
  return undefined;
}

t.test('parse: text and templates', async (t) => {
  t.same(parseTemplateString(''), ['']);
  t.same(parseTemplateString('plain'), ['plain']);
  t.same(parseTemplateString('{{trigger.output.body.a}}'), [{ source: '{{trigger.output.body.a}}', path: ['trigger', 'output', 'body', 'a'] }]);
  t.same(parseTemplateString('a {{ trigger.output.query.p }} b'), [
    'a ',
    { source: '{{ trigger.output.query.p }}', path: ['trigger', 'output', 'query', 'p'] },
    ' b',
  ]);
  t.same(parseTemplateString('{{nodes.n1.output.items[0]["x y"].z}}'), [
    { source: '{{nodes.n1.output.items[0]["x y"].z}}', path: ['nodes', 'n1', 'output', 'items', '0', 'x y', 'z'] },
  ]);
  t.same(parseTemplateString('\\{{x}}'), ['{{x}}'], 'escaped');
  t.same(parseTemplateString('\\\\{{trigger.output}}'), ['\\', { source: '{{trigger.output}}', path: ['trigger', 'output'] }], 'escaped backslash');
  t.same(parseTemplateString('{{trigger.output}}{{trigger.output}}').length, 2, 'adjacent templates');
});

t.test('syntax errors, exactly', async (t) => {
  const cases: [string, string][] = [
    ['{{}}', '{{}}: empty template'],
    ['{{   }}', '{{   }}: empty template'],
    ['{{trigger.output.body', '{{trigger.output.body: unclosed template: "}}" is missing'],
    ['x {{trigger.output.body.a} y', '{{trigger.output.body.a} y: unclosed template: "}}" is missing'],
    ['{{trigger.output.body.a b}}', '{{trigger.output.body.a b}}: unexpected "b" after "trigger.output.body.a": a template holds one path'],
    ['{{trigger.output.body.a}b}}', '{{trigger.output.body.a}b}}: unexpected "}" after "trigger.output.body.a": a template holds one path'],
    ['{{trigger.output..a}}', '{{trigger.output..a}}: expected a field name after "trigger.output.", found "."'],
    ['{{trigger.output.}}', '{{trigger.output.}}: expected a field name after "trigger.output.", found "}"'],
    ['{{.trigger}}', '{{.trigger}}: expected a field name after "{{", found "."'],
    ['{{ [0] }}', '{{ [0] }}: expected a field name after "{{", found "["'],
    ['{{{trigger.output}}}', '{{{trigger.output}}: expected a field name after "{{", found "{"'],
    ['{{"a"}}', '{{"a"}}: expected a field name after "{{", found "\\""'],
    ['{{trigger.output.body[x]}}', '{{trigger.output.body[x]}}: expected a number or a quoted key after "trigger.output.body[", found "x"'],
    ['{{trigger.output.body[]}}', '{{trigger.output.body[]}}: expected a number or a quoted key after "trigger.output.body[", found "]"'],
    ['{{trigger.output.body[0}}', '{{trigger.output.body[0}}: expected "]" after "trigger.output.body[0", found "}"'],
    ['{{trigger.output.body["k"}}', '{{trigger.output.body["k"}}: expected "]" after "trigger.output.body[\\"k\\"", found "}"'],
    ['{{trigger.output.body[01]}}', '{{trigger.output.body[01]}}: "trigger.output.body[01]" is not an index: write it without leading zeros'],
    ['{{trigger.output.body[-1]}}', '{{trigger.output.body[-1]}}: expected a number or a quoted key after "trigger.output.body[", found "-"'],
    ['{{trigger.output.body["\\q"]}}', '{{trigger.output.body["\\q"]}}: invalid quoted key after "trigger.output.body[": write it as a JSON string'],
    ['{{trigger.output.body["open}}', '{{trigger.output.body["open}}: unterminated quoted key after "trigger.output.body["'],
    ['{{trigger.output.body\\a}}', '{{trigger.output.body\\a}}: unexpected "\\\\" after "trigger.output.body": a template holds one path'],
  ];
  for (const [s, message] of cases) {
    const err = parseError(s);
    t.equal(err?.code, 'TEMPLATE_SYNTAX', `${s}: code`);
    t.equal(err?.message, message, `${s}: message`);
  }
});

t.test('quoted keys may hold anything, "}}" included', async (t) => {
  t.same(parseTemplateString('{{trigger.output.body["a}}b"]}}'), [{ source: '{{trigger.output.body["a}}b"]}}', path: ['trigger', 'output', 'body', 'a}}b'] }]);
  t.same(parseTemplateString('{{trigger.output.body["\\"\\u00e9."]}}')[0], {
    source: '{{trigger.output.body["\\"\\u00e9."]}}',
    path: ['trigger', 'output', 'body', '"é.'],
  });
});

t.test('roots', async (t) => {
  const ok = [
    '{{trigger.output}}',
    '{{trigger.output.body}}',
    '{{trigger.output.query}}',
    '{{trigger.output.body.x.y}}',
    '{{nodes.a.output}}',
    '{{nodes.a.output.b}}',
    '{{trigger.output.headers}}',
    '{{trigger.output.headers.x-github-event}}',
    '{{trigger.output.method}}',
  ];
  for (const s of ok) t.equal(parseError(s), undefined, s);
  const bad: [string, string][] = [
    ['{{trigger}}', '{{trigger}}: trigger has only "output": use trigger.output.body or trigger.output.query'],
    ['{{trigger.input.body}}', '{{trigger.input.body}}: trigger has only "output": use trigger.output.body or trigger.output.query'],
    ['{{trigger.output.header}}', '{{trigger.output.header}}: trigger.output has no field "header": it has only "body", "query", "headers" and "method"'],
    ['{{nodes}}', '{{nodes}}: use nodes.<node id>.output'],
    ['{{nodes.a}}', '{{nodes.a}}: nodes.a has only "output": use nodes.a.output'],
    ['{{nodes.a.result}}', '{{nodes.a.result}}: nodes.a has only "output": use nodes.a.output'],
    ['{{nodes["a b"].x}}', '{{nodes["a b"].x}}: nodes["a b"] has only "output": use nodes["a b"].output'],
    ['{{env.SECRET}}', '{{env.SECRET}}: unknown root "env": a template starts with trigger.output or nodes.<node id>.output'],
    ['{{process}}', '{{process}}: unknown root "process": a template starts with trigger.output or nodes.<node id>.output'],
    ['{{__proto__.x}}', '{{__proto__.x}}: unknown root "__proto__": a template starts with trigger.output or nodes.<node id>.output'],
    ['{{constructor}}', '{{constructor}}: unknown root "constructor": a template starts with trigger.output or nodes.<node id>.output'],
  ];
  for (const [s, message] of bad) {
    const err = parseError(s);
    t.equal(err?.code, 'TEMPLATE_UNKNOWN_ROOT', `${s}: code`);
    t.equal(err?.message, message, `${s}: message`);
  }
});

t.test('validateTemplates: every problem, with its field', async (t) => {
  const input: JsonValue = {
    fine: 'Hi {{trigger.output.body.name}}',
    escaped: '\\{{not checked}}',
    list: ['{{nodes.first.output}}', '{{nodes.later.output.x}}', { deep: 'x {{bad' }],
    'odd key': '{{nope}}',
    num: 1,
    nil: null,
  };
  const errors = validateTemplates(input, { earlierNodeIds: ['first'], field: 'nodes[1].input' });
  t.same(
    errors.map((e) => [e.code, e.field, e.message]),
    [
      ['TEMPLATE_UNKNOWN_NODE', 'nodes[1].input.list[1]', '{{nodes.later.output.x}}: node "later" does not run before this node'],
      ['TEMPLATE_SYNTAX', 'nodes[1].input.list[2].deep', '{{bad: unclosed template: "}}" is missing'],
      ['TEMPLATE_UNKNOWN_ROOT', 'nodes[1].input["odd key"]', '{{nope}}: unknown root "nope": a template starts with trigger.output or nodes.<node id>.output'],
    ],
  );
  t.same(validateTemplates({ a: '{{nodes.x.output}}' }), [], 'node ids not checked without earlierNodeIds');
  t.same(
    validateTemplates({ a: '{{nodes.x.output}}' }, { earlierNodeIds: [] }).map((e) => e.message),
    ['{{nodes.x.output}}: node "x" does not run before this node'],
  );
  t.same(validateTemplates('{{trigger.output.body.any.path.at.all}}'), [], 'paths into the data are not known before a run');
  t.same(validateTemplates({ '{{keys are not templates': 1 }), [], 'keys are not checked');
  t.equal(validateTemplates('{{x}}')[0]?.field, '', 'no prefix, the root itself');
});

t.test('formatPath', async (t) => {
  t.equal(formatPath([]), '');
  t.equal(formatPath(['a', 'b']), 'a.b');
  t.equal(formatPath(['a', 0, 'b']), 'a[0].b');
  t.equal(formatPath(['a', '0']), 'a.0');
  t.equal(formatPath(['a b', 'c.d', 'e"f', '']), '["a b"]["c.d"]["e\\"f"][""]');
  t.equal(formatPath([0], 'input'), 'input[0]');
  t.equal(formatPath(['x'], 'input'), 'input.x');
});
