/**
 * Every enum field of every control-plane request message refuses a value its enum does not define, by
 * name and by number: 400 `invalid_argument` naming the field. The fields are found by walking the
 * protobuf-es descriptors of the services' methods, so a new enum field is covered without a new test.
 */
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import t from 'tap';
import { WorkflowService, WorkspaceService } from '../../src/gen/ldbox/workflows/v1/workflows_pb.js';
import { createWorkflow, gatewayFixture, rpc } from './harness.js';

interface EnumField {
  /** Where the field is, as JSON names (`webhook.authMethod`). */
  path: string;
  field: DescField;
  /** Builds the request JSON with `value` at the field. */
  build(value: unknown): Record<string, unknown>;
}

/** Every enum field reachable from `desc` (singular, repeated, map values; nested messages, not google.protobuf's). */
function enumFields(desc: DescMessage, depth = 0): EnumField[] {
  if (depth > 4 || desc.typeName.startsWith('google.protobuf.')) return [];
  const out: EnumField[] = [];
  for (const field of desc.fields) {
    const at = (inner: unknown): Record<string, unknown> => ({ [field.jsonName]: inner });
    const kind = field.fieldKind === 'list' ? field.listKind : field.fieldKind === 'map' ? field.mapKind : field.fieldKind;
    const wrap = (v: unknown): unknown => (field.fieldKind === 'list' ? [v] : field.fieldKind === 'map' ? { k: v } : v);
    if (kind === 'enum') out.push({ path: field.jsonName, field, build: (v) => at(wrap(v)) });
    if (kind === 'message' && field.message) {
      for (const inner of enumFields(field.message, depth + 1)) {
        out.push({ path: `${field.jsonName}.${inner.path}`, field: inner.field, build: (v) => at(wrap(inner.build(v))) });
      }
    }
  }
  return out;
}

t.test('unknown enum values are refused on every control-plane request', async (t) => {
  const { base } = await gatewayFixture(t);
  const wf = await createWorkflow(base);
  let covered = 0;
  for (const service of [WorkflowService, WorkspaceService]) {
    for (const method of service.methods) {
      for (const e of enumFields(method.input)) {
        covered++;
        const what = `${service.name}/${method.name} ${e.path}`;
        // Ids set so that only the enum can be wrong.
        const base_ = { workflowId: wf.id, id: wf.id, name: 'ws', workspace: 'ws' };
        const known = Object.keys(base_).filter((k) => method.input.fields.some((f) => f.jsonName === k));
        const fill = (v: unknown) => ({ ...Object.fromEntries(known.map((k) => [k, base_[k as keyof typeof base_]])), ...e.build(v) });
        for (const [how, value] of [
          ['by name', 'NOT_A_KNOWN_VALUE'],
          ['by number', 9999],
        ] as const) {
          const r = await rpc(base, method.name, fill(value), { service: service.typeName });
          t.equal(r.status, 400, `${what} ${how}: 400`);
          t.equal(r.json?.code, 'invalid_argument', `${what} ${how}: invalid_argument`);
          const message = String(r.json?.message ?? '');
          t.ok(message.includes(e.field.jsonName) || message.includes(e.field.name), `${what} ${how}: the message names the field (${message})`);
        }
      }
    }
  }
  t.ok(covered > 0, `${covered} enum fields covered`);

  t.test('SetWebhookAuthMethod with an unknown method keeps the workflow as it was', async (t) => {
    const before = await rpc(base, 'GetWorkflow', { id: wf.id });
    const r = await rpc(base, 'SetWebhookAuthMethod', { workflowId: wf.id, authMethod: 'AUTH_METHOD_SIGNATURE' });
    t.equal(r.status, 400);
    const after = await rpc(base, 'GetWorkflow', { id: wf.id });
    t.same(after.json.workflow.webhook, before.json.workflow.webhook, 'unchanged');
  });
});
