/**
 * Rendering a node's input (src/workflows/template.ts, `renderTemplates`): whole-value templates keep
 * their JSON type, embedded ones interpolate, objects and arrays are walked, indices, quoted keys,
 * earlier nodes' outputs, escapes, missing paths with exact messages, prototype keys, and the size bound.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import t from 'tap';
import { renderTemplates, type TemplateContext, TemplateError } from '../../src/workflows/template.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

function context(body: JsonValue = {}, query: JsonValue = {}, nodes: TemplateContext['nodes'] = {}): TemplateContext {
  return { trigger: { output: { body, query } }, nodes };
}

const body = {
  user: { name: 'Ada', age: 36, admin: true, manager: null, tags: ['a', 'b'] },
  items: [
    { id: 'i1', qty: 2 },
    { id: 'i2', qty: 0 },
  ],
  text: 'hello',
  empty: '',
  zero: 0,
  no: false,
  nothing: null,
  list: [],
  obj: {},
  'content-type': 'application/json',
  'a.b': 'dotted key',
  'with space': 'spaced key',
  '0': 'key zero',
  ünï: 'unicode key',
  quote: 'say "hi"\n',
};
const query = { p: 'v', repeated: ['1', '2'], empty: '' };
const nodes = { fetch: { output: { status: 200, rows: [{ id: 7 }] } }, 'second-node': { output: 'plain' }, nullish: { output: null } };
const ctx = context(body, query, nodes);

/** The TemplateError that rendering `value` throws; fails the test when it throws none. */
function renderError(t: Test, value: JsonValue, c: TemplateContext = ctx, options: Parameters<typeof renderTemplates>[2] = {}): TemplateError {
  try {
    renderTemplates(value, c, options);
  } catch (err) {
    if (err instanceof TemplateError) return err;
    throw err;
  }
  t.fail(`expected a TemplateError for ${JSON.stringify(value)}`);
  return new TemplateError('TEMPLATE_SYNTAX', '', 'not thrown', '');
}

t.test('a whole-value template keeps the JSON type of the value', async (t) => {
  const cases: [string, JsonValue][] = [
    ['{{trigger.output.body.user}}', body.user],
    ['{{trigger.output.body.user.name}}', 'Ada'],
    ['{{trigger.output.body.user.age}}', 36],
    ['{{trigger.output.body.user.admin}}', true],
    ['{{trigger.output.body.no}}', false],
    ['{{trigger.output.body.zero}}', 0],
    ['{{trigger.output.body.user.manager}}', null],
    ['{{trigger.output.body.nothing}}', null],
    ['{{trigger.output.body.user.tags}}', ['a', 'b']],
    ['{{trigger.output.body.items}}', body.items],
    ['{{trigger.output.body.list}}', []],
    ['{{trigger.output.body.obj}}', {}],
    ['{{trigger.output.body.empty}}', ''],
    ['{{trigger.output.body}}', body],
    ['{{trigger.output.query}}', query],
    ['{{trigger.output}}', { body, query }],
    ['{{trigger.output.query.p}}', 'v'],
    ['{{trigger.output.query.repeated}}', ['1', '2']],
    ['{{trigger.output.query.empty}}', ''],
  ];
  for (const [template, want] of cases) t.same(renderTemplates(template, ctx), want, template);
  t.equal(renderTemplates('{{trigger.output.body.user.age}}', ctx), 36, 'a number stays a number (strict)');
  t.equal(renderTemplates('{{trigger.output.body.user.admin}}', ctx), true, 'a boolean stays a boolean (strict)');
  t.equal(renderTemplates('{{trigger.output.body.nothing}}', ctx), null, 'null stays null (strict)');
});

t.test('whitespace inside the braces is allowed; around them the template is embedded text', async (t) => {
  t.equal(renderTemplates('{{ trigger.output.body.user.age }}', ctx), 36, 'spaces');
  t.equal(renderTemplates('{{\ttrigger.output.body.user.age\n}}', ctx), 36, 'tab and newline');
  t.equal(renderTemplates('{{trigger.output.body.user.age   }}', ctx), 36, 'trailing only');
  t.equal(renderTemplates(' {{trigger.output.body.user.age}}', ctx), ' 36', 'a leading space makes it text');
  t.equal(renderTemplates('{{trigger.output.body.user.age}} ', ctx), '36 ', 'a trailing space makes it text');
});

t.test('an embedded template interpolates: strings as they are, other values as JSON', async (t) => {
  const cases: [string, string][] = [
    ['Hello {{trigger.output.body.user.name}}!', 'Hello Ada!'],
    ['age={{trigger.output.body.user.age}}', 'age=36'],
    ['admin={{trigger.output.body.user.admin}}', 'admin=true'],
    ['manager={{trigger.output.body.user.manager}}', 'manager=null'],
    ['tags={{trigger.output.body.user.tags}}', 'tags=["a","b"]'],
    ['item={{trigger.output.body.items.0}}', 'item={"id":"i1","qty":2}'],
    ['[{{trigger.output.body.empty}}]', '[]'],
    ['{{trigger.output.body.user.name}}{{trigger.output.body.user.age}}', 'Ada36'],
    ['{{trigger.output.body.user.name}} is {{trigger.output.body.user.age}}', 'Ada is 36'],
    ['q={{trigger.output.query.p}}&r={{trigger.output.query.repeated}}', 'q=v&r=["1","2"]'],
    ['{{trigger.output.body.quote}}.', 'say "hi"\n.'],
    ['{{trigger.output.body.obj}}{{trigger.output.body.list}}', '{}[]'],
  ];
  for (const [template, want] of cases) t.equal(renderTemplates(template, ctx), want, template);
});

t.test('strings without templates, and other JSON values, are kept', async (t) => {
  const value: JsonValue = { s: 'plain', n: 1.5, b: false, z: null, a: [1, 'two', [3]], o: { p: {} }, single: '{', close: '}}', half: '{ {x}}' };
  t.same(renderTemplates(value, ctx), value);
  t.equal(renderTemplates('', ctx), '', 'empty string');
});

t.test('objects and arrays are walked recursively; the input is not changed', async (t) => {
  const input = {
    to: '{{trigger.output.body.user.name}}',
    nested: { deeper: { age: '{{trigger.output.body.user.age}}', list: ['{{trigger.output.body.items.1.id}}', 'x-{{trigger.output.query.p}}', 3] } },
    rows: [{ first: '{{nodes.fetch.output.rows.0}}' }, ['{{trigger.output.body.no}}']],
  };
  const snapshot = JSON.parse(JSON.stringify(input)) as JsonValue;
  t.same(renderTemplates(input, ctx), {
    to: 'Ada',
    nested: { deeper: { age: 36, list: ['i2', 'x-v', 3] } },
    rows: [{ first: { id: 7 } }, [false]],
  });
  t.same(input, snapshot, 'input unchanged');
});

t.test('a referenced object is copied, not shared with the context', async (t) => {
  const c = context({ o: { k: [1] } });
  const out = renderTemplates({ a: '{{trigger.output.body.o}}', b: '{{trigger.output.body.o}}' }, c) as { a: { k: number[] }; b: { k: number[] } };
  out.a.k.push(2);
  t.same(c.trigger.output.body, { o: { k: [1] } }, 'context unchanged');
  t.same(out.b.k, [1], 'the two copies are independent');
});

t.test('array indices by number segments and brackets; quoted keys', async (t) => {
  const cases: [string, JsonValue][] = [
    ['{{trigger.output.body.items.0.id}}', 'i1'],
    ['{{trigger.output.body.items.1.qty}}', 0],
    ['{{trigger.output.body.items[1].id}}', 'i2'],
    ['{{trigger.output.body.items[0]["id"]}}', 'i1'],
    ['{{trigger.output.body.user.tags.1}}', 'b'],
    ['{{trigger.output.body["content-type"]}}', 'application/json'],
    ['{{trigger.output.body["a.b"]}}', 'dotted key'],
    ['{{trigger.output.body["with space"]}}', 'spaced key'],
    ['{{trigger.output.body.content-type}}', 'application/json'],
    ['{{trigger.output.body.0}}', 'key zero'],
    ['{{trigger.output.body[0]}}', 'key zero'],
    ['{{trigger.output.body.ünï}}', 'unicode key'],
    ['{{trigger.output["body"].text}}', 'hello'],
    ['{{trigger.output.body["\\u0071uote"]}}', 'say "hi"\n'],
    ['{{nodes.fetch.output.rows[0].id}}', 7],
  ];
  for (const [template, want] of cases) t.same(renderTemplates(template, ctx), want, template);
});

t.test("earlier nodes' outputs: nodes.<id>.output", async (t) => {
  t.same(renderTemplates('{{nodes.fetch.output}}', ctx), { status: 200, rows: [{ id: 7 }] });
  t.equal(renderTemplates('{{nodes.fetch.output.status}}', ctx), 200);
  t.equal(renderTemplates('{{nodes.second-node.output}}', ctx), 'plain', 'a node id with a dash');
  t.equal(renderTemplates('{{nodes.nullish.output}}', ctx), null, 'a null output');
  t.equal(renderTemplates('status {{nodes.fetch.output.status}}: {{nodes.second-node.output}}', ctx), 'status 200: plain');
  const err = renderError(t, '{{nodes.later.output}}');
  t.equal(err.code, 'TEMPLATE_MISSING_PATH');
  t.equal(err.message, '{{nodes.later.output}}: node "later" has no output: it did not run before this node');
  t.equal(renderError(t, '{{nodes.nullish.output.x}}').message, '{{nodes.nullish.output.x}}: nodes.nullish.output is null: it has no field "x"');
});

t.test('escapes: a backslash makes {{ literal; backslashes before {{ pair up', async (t) => {
  const cases: [string, JsonValue][] = [
    ['\\{{trigger.output.body.text}}', '{{trigger.output.body.text}}'],
    ['\\{{not a template', '{{not a template'],
    ['use \\{{name}} here', 'use {{name}} here'],
    ['\\\\{{trigger.output.body.text}}', '\\hello'],
    ['\\\\\\{{x}}', '\\{{x}}'],
    ['\\\\\\\\{{trigger.output.body.text}}', '\\\\hello'],
    ['a\\b \\n {{trigger.output.body.text}}', 'a\\b \\n hello'],
    ['\\{{x}} {{trigger.output.body.text}}', '{{x}} hello'],
    ['\\{{{trigger.output.body.text}}', '{{{trigger.output.body.text}}'],
    ['{{trigger.output.body.text}}\\{{', 'hello{{'],
    ['\\}}', '\\}}'],
  ];
  for (const [template, want] of cases) t.same(renderTemplates(template, ctx), want, JSON.stringify(template));
  t.equal(renderTemplates('\\{{trigger.output.body.user.age}}', ctx), '{{trigger.output.body.user.age}}', 'an escaped whole-value template is text');
});

t.test('a missing path is a TemplateError naming the template and the missing segment', async (t) => {
  const cases: [string, string][] = [
    ['{{trigger.output.body.a.b}}', '{{trigger.output.body.a.b}}: trigger.output.body has no field "a"'],
    ['{{trigger.output.body.user.email}}', '{{trigger.output.body.user.email}}: trigger.output.body.user has no field "email"'],
    ['{{trigger.output.body.user.name.first}}', '{{trigger.output.body.user.name.first}}: trigger.output.body.user.name is a string: it has no field "first"'],
    ['{{trigger.output.body.user.age.x}}', '{{trigger.output.body.user.age.x}}: trigger.output.body.user.age is a number: it has no field "x"'],
    ['{{trigger.output.body.user.admin.x}}', '{{trigger.output.body.user.admin.x}}: trigger.output.body.user.admin is a boolean: it has no field "x"'],
    ['{{trigger.output.body.nothing.x}}', '{{trigger.output.body.nothing.x}}: trigger.output.body.nothing is null: it has no field "x"'],
    ['{{trigger.output.body.items.2}}', '{{trigger.output.body.items.2}}: trigger.output.body.items has no index 2 (length 2)'],
    ['{{trigger.output.body.items[9].id}}', '{{trigger.output.body.items[9].id}}: trigger.output.body.items has no index 9 (length 2)'],
    ['{{trigger.output.body.items.first}}', '{{trigger.output.body.items.first}}: trigger.output.body.items is an array: "first" is not an index'],
    ['{{trigger.output.body.items.length}}', '{{trigger.output.body.items.length}}: trigger.output.body.items is an array: "length" is not an index'],
    ['{{trigger.output.body.list.0}}', '{{trigger.output.body.list.0}}: trigger.output.body.list has no index 0 (length 0)'],
    ['{{trigger.output.body.items.0.missing}}', '{{trigger.output.body.items.0.missing}}: trigger.output.body.items.0 has no field "missing"'],
    ['{{trigger.output.body["no such"]}}', '{{trigger.output.body["no such"]}}: trigger.output.body has no field "no such"'],
    ['{{trigger.output.body.obj["a.b"].c}}', '{{trigger.output.body.obj["a.b"].c}}: trigger.output.body.obj has no field "a.b"'],
    ['{{trigger.output.query.missing}}', '{{trigger.output.query.missing}}: trigger.output.query has no field "missing"'],
    ['{{trigger.output.query.p.x}}', '{{trigger.output.query.p.x}}: trigger.output.query.p is a string: it has no field "x"'],
  ];
  for (const [template, message] of cases) {
    const err = renderError(t, template);
    t.equal(err.code, 'TEMPLATE_MISSING_PATH', `${template}: code`);
    t.equal(err.message, message, `${template}: message`);
    t.equal(err.template, template, `${template}: template`);
    t.equal(err.name, 'TemplateError');
  }
  t.equal(renderError(t, 'Hi {{trigger.output.body.who}}!').message, '{{trigger.output.body.who}}: trigger.output.body has no field "who"', 'embedded');
});

t.test('the error says where in the input the template is', async (t) => {
  const input = { a: { list: ['ok', 'x {{trigger.output.body.gone}}'] }, 'odd key': '{{trigger.output.body.gone}}' };
  t.equal(renderError(t, input).field, 'a.list[1]');
  t.equal(renderError(t, input, ctx, { field: 'input' }).field, 'input.a.list[1]', 'with a prefix');
  t.equal(renderError(t, { 'odd key': '{{trigger.output.body.gone}}' }, ctx, { field: 'input' }).field, 'input["odd key"]');
  t.equal(renderError(t, '{{trigger.output.body.gone}}', ctx, { field: 'input' }).field, 'input', 'the root itself');
  t.equal(renderError(t, ['{{bad']).field, '[0]', 'a syntax error found at render time');
});

t.test('__proto__, constructor and prototype never reach a prototype', async (t) => {
  for (const key of ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf']) {
    const err = renderError(t, `{{trigger.output.body.${key}}}`);
    t.equal(err.message, `{{trigger.output.body.${key}}}: trigger.output.body has no field "${key}"`, `${key} of an object`);
    t.equal(renderError(t, `{{trigger.output.body.user.name.${key}}}`).code, 'TEMPLATE_MISSING_PATH', `${key} of a string`);
    t.equal(renderError(t, `{{trigger.output.body.items.${key}}}`).code, 'TEMPLATE_MISSING_PATH', `${key} of an array`);
    t.equal(renderError(t, `{{nodes.${key}.output}}`).code, 'TEMPLATE_MISSING_PATH', `${key} as a node id`);
    t.equal(renderError(t, `{{trigger.output.body.user.${key}.name}}`).code, 'TEMPLATE_MISSING_PATH', `${key} in the middle`);
  }
  // Own fields of those names (JSON.parse makes `__proto__` an own data property) are data like any other.
  const parsed = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": 1}}') as JsonValue;
  const c = context(parsed);
  t.same(renderTemplates('{{trigger.output.body.__proto__}}', c), { polluted: 'yes' }, 'own __proto__ field');
  t.equal(renderTemplates('{{trigger.output.body.__proto__.polluted}}', c), 'yes');
  t.equal(renderTemplates('{{trigger.output.body.constructor.prototype}}', c), 1, 'own constructor.prototype');
  const whole = renderTemplates('{{trigger.output.body}}', c) as Record<string, unknown>;
  t.ok(Object.hasOwn(whole, '__proto__'), 'a copied __proto__ stays an own field');
  t.equal(Object.getPrototypeOf(whole), Object.prototype, "and the copy's prototype is untouched");
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'Object.prototype not polluted');
  // A `__proto__` key in the input itself stays an own field of the output.
  const input = JSON.parse('{"__proto__": "{{trigger.output.body.constructor}}"}') as JsonValue;
  const out = renderTemplates(input, c) as Record<string, unknown>;
  t.ok(Object.hasOwn(out, '__proto__'), 'input __proto__ key kept as data');
  t.same(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { prototype: 1 });
  t.equal(Object.getPrototypeOf(out), Object.prototype);
});

t.test('getters and inherited fields of a context object are not read', async (t) => {
  const proto = { inherited: 'no' };
  const withProto = Object.create(proto) as Record<string, unknown>;
  let called = false;
  Object.defineProperty(withProto, 'getter', { get: () => ((called = true), 'no'), enumerable: true });
  const c = context(withProto as JsonValue);
  t.equal(renderError(t, '{{trigger.output.body.inherited}}', c).message, '{{trigger.output.body.inherited}}: trigger.output.body has no field "inherited"');
  t.equal(renderError(t, '{{trigger.output.body.getter}}', c).message, '{{trigger.output.body.getter}}: trigger.output.body has no field "getter"');
  t.equal(called, false, 'getter not called');
});

t.test('unknown roots and bad syntax are refused at render time too', async (t) => {
  const cases: [string, string, string][] = [
    ['{{body.a}}', 'TEMPLATE_UNKNOWN_ROOT', '{{body.a}}: unknown root "body": a template starts with trigger.output or nodes.<node id>.output'],
    ['{{trigger.body.a}}', 'TEMPLATE_UNKNOWN_ROOT', '{{trigger.body.a}}: trigger has only "output": use trigger.output.body or trigger.output.query'],
    [
      '{{trigger.output.cookies.x}}',
      'TEMPLATE_UNKNOWN_ROOT',
      '{{trigger.output.cookies.x}}: trigger.output has no field "cookies": it has only "body", "query", "headers" and "method"',
    ],
    [
      '{{trigger.output.headers.X-GitHub-Event}}',
      'TEMPLATE_SYNTAX',
      '{{trigger.output.headers.X-GitHub-Event}}: header names are lower case in trigger.output.headers: write trigger.output.headers.x-github-event',
    ],
    ['{{trigger.output.method.x}}', 'TEMPLATE_UNKNOWN_ROOT', '{{trigger.output.method.x}}: trigger.output.method is a string: it has no fields'],
    ['{{nodes.fetch.status}}', 'TEMPLATE_UNKNOWN_ROOT', '{{nodes.fetch.status}}: nodes.fetch has only "output": use nodes.fetch.output'],
    ['x {{trigger.output.body.text', 'TEMPLATE_SYNTAX', '{{trigger.output.body.text: unclosed template: "}}" is missing'],
  ];
  for (const [template, code, message] of cases) {
    const err = renderError(t, template);
    t.equal(err.code, code, `${template}: code`);
    t.equal(err.message, message, `${template}: message`);
  }
});

t.test('the rendered size is bounded', async (t) => {
  const big = 'x'.repeat(1000);
  const c = context({ big, obj: { big } });
  t.equal(renderTemplates('{{trigger.output.body.big}}', c, { maxOutputBytes: 1002 }), big, 'exactly at the limit (string with quotes)');
  const over = renderError(t, '{{trigger.output.body.big}}', c, { maxOutputBytes: 1001 });
  t.equal(over.code, 'TEMPLATE_TOO_LARGE');
  t.equal(over.message, '{{trigger.output.body.big}}: the rendered value is over the limit of 1001 bytes of JSON');

  // Many references to one value: refused as soon as the total crosses the bound, not after building it.
  const many = Array.from({ length: 10_000 }, () => '{{trigger.output.body.obj}}');
  const err = renderError(t, many, c, { maxOutputBytes: 50_000 });
  t.equal(err.code, 'TEMPLATE_TOO_LARGE');
  t.match(err.field, /^\[\d+\]$/, 'names the element that crossed the bound');

  const embedded = renderError(t, { s: `${'{{trigger.output.body.big}}'.repeat(100)}` }, c, { maxOutputBytes: 10_000 });
  t.equal(embedded.code, 'TEMPLATE_TOO_LARGE', 'embedded interpolation is bounded too');
  t.equal(embedded.field, 's');

  const literal = renderError(t, { s: big }, c, { maxOutputBytes: 100 });
  t.equal(literal.message, 'the rendered value is over the limit of 100 bytes of JSON', 'literal text counts; no template to name');

  // The count is the JSON size of the result.
  const input = { a: ['{{trigger.output.body.obj}}', 1, true, null], 'k"ey': 'é {{trigger.output.body.big}}' };
  const size = Buffer.byteLength(JSON.stringify(renderTemplates(input, c)), 'utf8');
  t.doesNotThrow(() => renderTemplates(input, c, { maxOutputBytes: size }), 'exactly the JSON size passes');
  t.equal(renderError(t, input, c, { maxOutputBytes: size - 1 }).code, 'TEMPLATE_TOO_LARGE', 'one byte less fails');
});

t.test('a value nested too deeply to copy is a TemplateError, not a crash', async (t) => {
  let deep: JsonValue = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  const err = renderError(t, '{{trigger.output.body.deep}}', context({ deep }));
  t.equal(err.code, 'TEMPLATE_TOO_LARGE');
  t.equal(err.message, '{{trigger.output.body.deep}}: trigger.output.body.deep is nested too deeply to render');
});

t.test('a long template is shortened in messages', async (t) => {
  const long = `{{trigger.output.body.${'x'.repeat(300)}}}`;
  const err = renderError(t, long);
  t.equal(err.template.length, 100);
  t.ok(err.template.endsWith('…'));
  t.ok(err.message.endsWith(`trigger.output.body has no field "${'x'.repeat(300)}"`), 'the detail keeps the full segment');
});
