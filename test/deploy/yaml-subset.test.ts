/**
 * The strict YAML reader of the deployment-file checks (yaml-subset.ts): what it reads, and that what it
 * does not read is refused rather than misread.
 */
import t from 'tap';
import { parseYaml, parseYamlDocuments, stripComment, YamlSubsetError } from './yaml-subset.js';

t.test('mappings, sequences and scalars', async (t) => {
  const doc = parseYaml(`# a comment
name: ldbox   # trailing comment
count: 3
ratio: 0.5
on: true
none: null
host: 0.0.0.0
port: "8080"
quoted: 'it''s # not a comment'
url: nats://a:4222,nats://b:4222
list:
  - a
  - "b: c"
  - name: x
    value: 1
  - - nested
compact:
- one
- two
flow: ["CMD", "node", "-e", "fetch('http://127.0.0.1:8080/readyz').then((r) => r, () => 1)"]
empty: []
emptyMap: {}
nested:
  deeper:
    key: value
`);
  t.same(doc, {
    name: 'ldbox',
    count: 3,
    ratio: 0.5,
    on: true,
    none: null,
    host: '0.0.0.0',
    port: '8080',
    quoted: "it's # not a comment",
    url: 'nats://a:4222,nats://b:4222',
    list: ['a', 'b: c', { name: 'x', value: 1 }, ['nested']],
    compact: ['one', 'two'],
    flow: ['CMD', 'node', '-e', "fetch('http://127.0.0.1:8080/readyz').then((r) => r, () => 1)"],
    empty: [],
    emptyMap: {},
    nested: { deeper: { key: 'value' } },
  });
});

t.test('block scalars keep their lines', async (t) => {
  const doc = parseYaml('a: |\n  line 1\n    indented # kept\n\n  line 3\nb: |-\n  no newline\nc: >-\n  folded\n  text\n');
  t.same(doc, { a: 'line 1\n  indented # kept\n\nline 3\n', b: 'no newline', c: 'folded text' });
});

t.test('anchors, aliases and merge keys (explicit keys win)', async (t) => {
  const doc = parseYaml(`base: &base
  image: x
  env:
    A: "1"
other: &name plain
svc:
  <<: *base
  image: y
copy: *name
`) as Record<string, Record<string, unknown>>;
  t.same(doc.svc, { image: 'y', env: { A: '1' } });
  t.equal(doc.copy, 'plain');
  (doc.svc!.env as Record<string, string>).A = 'changed';
  t.equal((doc.base!.env as Record<string, string>).A, '1', 'a merged value is a copy');
});

t.test('several documents', async (t) => {
  t.same(parseYamlDocuments('# header only\n---\na: 1\n---\n# empty\n---\n- b\n'), [{ a: 1 }, ['b']]);
});

t.test('what it does not read is refused', async (t) => {
  const refused = [
    'a: !tag x\n',
    'a: {b: 1}\n',
    'a: [[1]]\n',
    'a: plain\n  continued\n',
    '? complex\n',
    'a: 1\na: 2\n',
    'a: *missing\n',
    '\ta: 1\n',
    'a: "unterminated\n',
    'a:\n  - x\n  y: 1\n',
    '%YAML 1.2\n---\na: 1\n',
  ];
  for (const text of refused) t.throws(() => parseYamlDocuments(text), YamlSubsetError, JSON.stringify(text));
});

t.test('comments end at a blank and a hash, outside quotes', async (t) => {
  t.equal(stripComment('a: b # c'), 'a: b');
  t.equal(stripComment('a: b#c'), 'a: b#c');
  t.equal(stripComment('a: "b # c" # d'), 'a: "b # c"');
  t.equal(stripComment("a: it's # c"), "a: it's");
});
