/**
 * The workflow model: checks of a CreateWorkflow request (each refusal a WorkflowValidationError with an
 * exact message naming the field), the stored record, the webhook URL, and the conversion of a record
 * to the `ldbox.workflows.v1.Workflow` message. Secret hashes never leave the record; node `auth` values
 * are shown redacted. Node `input` and `auth` keep every key, `__proto__` too (src/json/proto-keys.ts).
 *
 * Tests: test/workflows/workflow-model.test.ts.
 */
import { create, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { type Duration, durationMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { randomBytes } from 'node:crypto';
import { LimitsSchema } from '../gen/ldbox/runner/v1/runner_pb.js';
import {
  AuthMethod,
  OverRate,
  type CreateWorkflowRequest,
  type Node,
  type UpdateWorkflowRequest,
  NodeSchema,
  SignaturePreset,
  type Webhook,
  WebhookSchema,
  type Workflow,
  WorkflowSchema,
} from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { type ProtoEncoding, setStructKeepingKeys } from '../json/proto-keys.js';
import { isExecutionId, isWorkflowId, newWebhookId, newWorkflowId } from './ids.js';
import { codeSyntaxError } from './code-syntax.js';
import { formatPath, type TemplateError, validateTemplates } from './template.js';
import { WorkflowValidationError } from './validation-error.js';
import type { SignaturePresetName } from './webhook-signature.js';
import {
  applyWebhookAuthSettings,
  createWebhookAuth,
  hasActiveSecret,
  previousSecretExpiry,
  type RandomBytes,
  resolveGracePeriodMs,
  type WebhookAuthMethod,
  type WebhookAuthState,
  webhookAuthWarnings,
} from './webhook-secret.js';

const MiB = 1024 * 1024;

/** Bounds of a workflow. Code, time and memory bounds default to the runner's defaults. */
export interface WorkflowLimits {
  /** Most nodes in a workflow. */
  maxNodes: number;
  /** Longest name, in characters (code points). */
  maxNameChars: number;
  /** Largest node `code`, in bytes of UTF-8 (the runner's LDBOX_MAX_CODE_BYTES). */
  maxCodeBytes: number;
  /** Largest node `input` + `auth`, in bytes of JSON (the runner's LDBOX_MAX_INPUT_BYTES). */
  maxInputBytes: number;
  /** Deepest nesting of objects and arrays in a node's `input` or `auth`. */
  maxInputDepth: number;
  /** Largest `limits.timeoutMs` (the runner's LDBOX_MAX_TIMEOUT_MS). */
  maxTimeoutMs: number;
  /** Smallest non-zero `limits.memoryBytes` (the runner's minimum). */
  minMemoryBytes: number;
  /** Largest `limits.memoryBytes` (the runner's LDBOX_MAX_MEMORY_MB). */
  maxMemoryBytes: number;
  /** Largest `rateLimitPerSecond`. */
  maxRateLimitPerSecond: number;
}

export const DEFAULT_WORKFLOW_LIMITS: Readonly<WorkflowLimits> = Object.freeze({
  maxNodes: 50,
  maxNameChars: 200,
  maxCodeBytes: 1 * MiB,
  maxInputBytes: 4 * MiB,
  maxInputDepth: 32,
  maxTimeoutMs: 120_000,
  minMemoryBytes: 4 * MiB,
  maxMemoryBytes: 512 * MiB,
  maxRateLimitPerSecond: 100_000,
});

/** One node as stored. Zero limits mean the runner's defaults. */
export interface NodeRecord {
  id: string;
  code: string;
  /** With templates, as given. */
  input: JsonObject;
  auth: JsonObject;
  limits: { timeoutMs: number; memoryBytes: number };
}

/** A workflow as stored (JSON). The webhook's secret is there as hashes only. */
export interface WorkflowRecord {
  id: string;
  name: string;
  workspace: string;
  nodes: NodeRecord[];
  webhook: { webhookId: string; auth: WebhookAuthState };
  /** 0 = the operator's default (LDBOX_WEBHOOK_RATE). */
  rateLimitPerSecond: number;
  /** Over the rate: `throttle` accepts and runs later; absent (records from before it existed too) refuses with 429. */
  overRate?: 'throttle';
  /** ISO-8601. */
  createdAt: string;
  /** 1 at creation, incremented by each UpdateWorkflow; absent in records from before versions (read as 1). */
  version?: number;
  /** ISO-8601 of the last UpdateWorkflow; absent until the first. */
  updatedAt?: string;
}

/** A record's version (records from before versions are version 1). */
export function workflowVersion(record: Pick<WorkflowRecord, 'version'>): number {
  return Number.isSafeInteger(record.version) && record.version! > 0 ? record.version! : 1;
}

/** A checked CreateWorkflow request, before it gets ids and a secret. */
export interface WorkflowDraft {
  name: string;
  workspace: string;
  nodes: NodeRecord[];
  authMethod: WebhookAuthMethod;
  /** With `signature`. */
  signaturePreset?: SignaturePresetName;
  rateLimitPerSecond: number;
  overRate?: 'throttle';
}

/**
 * A workspace name is a KV key (`ldbox-workspaces`) and may become a subject token: dot-separated tokens of
 * A-Z a-z 0-9 _ -, so no empty token (leading, trailing or double dot), no wildcard (`*`, `>`), no whitespace.
 */
const WORKSPACE = /^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$/;
/** Longest workspace name, in characters. */
export const MAX_WORKSPACE_CHARS = 64;
const NODE_ID = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const RESERVED_NODE_IDS = new Set(['__proto__', 'constructor', 'prototype']);
// C0, DEL and C1 control characters, and the line/paragraph separators.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function invalid(field: string, message: string): WorkflowValidationError {
  return new WorkflowValidationError(field, message);
}

/**
 * True when `s` is a valid workspace name: 1 to 64 characters, tokens of A-Z a-z 0-9 _ - separated by single
 * dots, starting with a letter or digit.
 */
export function isWorkspaceName(s: string): boolean {
  return s.length <= MAX_WORKSPACE_CHARS && WORKSPACE.test(s);
}

/** Throws the refusal of a bad workspace name in `field`. */
export function checkWorkspaceName(s: string, field = 'workspace'): void {
  if (s === '') throw invalid(field, `${field} is required`);
  if (s.length > MAX_WORKSPACE_CHARS) throw invalid(field, `${field} must be at most ${MAX_WORKSPACE_CHARS} characters, got ${s.length}`);
  if (!WORKSPACE.test(s)) {
    throw invalid(
      field,
      `${field} must be tokens of A-Z a-z 0-9 _ - separated by single dots, starting with a letter or digit (no whitespace, * or >, no leading, trailing or double dot), got ${JSON.stringify(s)}`,
    );
  }
}

/** Throws unless `s` is a workflow id; the gateway's check before any lookup. */
export function checkWorkflowId(s: string, field = 'id'): void {
  if (s === '') throw invalid(field, `${field} is required`);
  if (!isWorkflowId(s)) throw invalid(field, `${field} ${JSON.stringify(s)} is not a workflow id (wf_ and 20 characters of 0-9 a-z)`);
}

/** Throws unless `s` is an execution id. */
export function checkExecutionId(s: string, field = 'id'): void {
  if (s === '') throw invalid(field, `${field} is required`);
  if (!isExecutionId(s)) throw invalid(field, `${field} ${JSON.stringify(s)} is not an execution id (ex_ and 26 characters of 0-9 a-z)`);
}

/** The proto enum as the stored method; throws on a number that is not an AuthMethod. */
export function authMethodFromProto(m: AuthMethod, field = 'authMethod'): WebhookAuthMethod {
  switch (m) {
    case AuthMethod.UNSPECIFIED:
      return 'legacy';
    case AuthMethod.NONE:
      return 'none';
    case AuthMethod.HEADER:
      return 'header';
    case AuthMethod.QUERY_PARAMETER:
      return 'query';
    case AuthMethod.SIGNATURE:
      return 'signature';
    default:
      throw invalid(field, `${field} ${String(m)} is not a known AuthMethod`);
  }
}

const PRESETS_FROM_PROTO: ReadonlyMap<SignaturePreset, SignaturePresetName> = new Map([
  [SignaturePreset.GITHUB, 'github'],
  [SignaturePreset.STRIPE, 'stripe'],
  [SignaturePreset.STANDARD_WEBHOOKS, 'standard-webhooks'],
  [SignaturePreset.SHOPIFY, 'shopify'],
  [SignaturePreset.SLACK, 'slack'],
]);

/** The proto enum as the stored preset: undefined for UNSPECIFIED; throws on a number that is not a SignaturePreset. */
export function signaturePresetFromProto(p: SignaturePreset, field = 'signaturePreset'): SignaturePresetName | undefined {
  if (p === SignaturePreset.UNSPECIFIED) return undefined;
  const name = PRESETS_FROM_PROTO.get(p);
  if (name === undefined) throw invalid(field, `${field} ${String(p)} is not a known SignaturePreset`);
  return name;
}

/** The stored preset as the proto enum. */
export function signaturePresetToProto(p: SignaturePresetName | undefined): SignaturePreset {
  for (const [proto, name] of PRESETS_FROM_PROTO) if (name === p) return proto;
  return SignaturePreset.UNSPECIFIED;
}

/** The stored method as the proto enum. */
export function authMethodToProto(m: WebhookAuthMethod): AuthMethod {
  switch (m) {
    case 'legacy':
      return AuthMethod.UNSPECIFIED;
    case 'none':
      return AuthMethod.NONE;
    case 'header':
      return AuthMethod.HEADER;
    case 'query':
      return AuthMethod.QUERY_PARAMETER;
    case 'signature':
      return AuthMethod.SIGNATURE;
  }
}

/**
 * Finds the first problem of a JSON value: nesting deeper than `maxDepth` or a number that is not finite.
 * Returns the message, or undefined.
 */
function jsonProblem(v: JsonValue, field: (string | number)[], prefix: string, depth: number, maxDepth: number): string | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : `${formatPath(field, prefix)} is ${String(v)}, not a JSON number`;
  if (v === null || typeof v !== 'object') return undefined;
  if (depth >= maxDepth) return `${formatPath(field, prefix)} is nested deeper than ${maxDepth} levels`;
  const entries: [string | number, JsonValue][] = Array.isArray(v)
    ? v.map((item, n) => [n, item])
    : Object.keys(v).map((k) => [k, (v as JsonObject)[k] as JsonValue]);
  for (const [key, item] of entries) {
    field.push(key);
    const problem = jsonProblem(item, field, prefix, depth + 1, maxDepth);
    field.pop();
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function checkNode(node: Node, at: string, earlierIds: readonly string[], seen: Map<string, number>, limits: WorkflowLimits): NodeRecord {
  if (node.id === '') throw invalid(`${at}.id`, `${at}.id is required`);
  if (!NODE_ID.test(node.id)) {
    throw invalid(`${at}.id`, `${at}.id must be 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter or _, got ${JSON.stringify(node.id)}`);
  }
  if (RESERVED_NODE_IDS.has(node.id)) throw invalid(`${at}.id`, `${at}.id ${JSON.stringify(node.id)} is reserved`);
  const other = seen.get(node.id);
  if (other !== undefined) throw invalid(`${at}.id`, `${at}.id ${JSON.stringify(node.id)} is already the id of nodes[${other}]`);

  if (node.code.trim() === '') throw invalid(`${at}.code`, `${at}.code is empty: send a JavaScript body that ends with \`return\``);
  const codeBytes = Buffer.byteLength(node.code, 'utf8');
  if (codeBytes > limits.maxCodeBytes) {
    throw invalid(`${at}.code`, `${at}.code is ${codeBytes} bytes, over the limit of ${limits.maxCodeBytes} bytes`);
  }
  const syntax = codeSyntaxError(node.code);
  if (syntax !== undefined) {
    throw invalid(
      `${at}.code`,
      `${at}.code: node ${JSON.stringify(node.id)} does not parse: ${syntax.message} at line ${syntax.line}, column ${syntax.column}`,
    );
  }

  const timeoutMs = node.limits?.timeoutMs ?? 0;
  if (timeoutMs > limits.maxTimeoutMs) {
    throw invalid(`${at}.limits.timeoutMs`, `${at}.limits.timeoutMs must be at most ${limits.maxTimeoutMs}, got ${timeoutMs}`);
  }
  const memory = node.limits?.memoryBytes ?? 0n;
  if (memory !== 0n && memory < BigInt(limits.minMemoryBytes)) {
    throw invalid(`${at}.limits.memoryBytes`, `${at}.limits.memoryBytes must be 0 (the default) or at least ${limits.minMemoryBytes}, got ${memory}`);
  }
  if (memory > BigInt(limits.maxMemoryBytes)) {
    throw invalid(`${at}.limits.memoryBytes`, `${at}.limits.memoryBytes must be at most ${limits.maxMemoryBytes}, got ${memory}`);
  }

  const input: JsonObject = node.input ?? {};
  const auth: JsonObject = node.auth ?? {};
  for (const [name, value] of [
    ['input', input],
    ['auth', auth],
  ] as const) {
    const problem = jsonProblem(value, [], `${at}.${name}`, 0, limits.maxInputDepth);
    if (problem !== undefined) throw invalid(`${at}.${name}`, problem);
  }
  const dataBytes = Buffer.byteLength(JSON.stringify({ input, auth }), 'utf8');
  if (dataBytes > limits.maxInputBytes) {
    throw invalid(`${at}.input`, `${at}.input and ${at}.auth are ${dataBytes} bytes of JSON, over the limit of ${limits.maxInputBytes} bytes`);
  }
  const [templateError] = validateTemplates(input, { earlierNodeIds: earlierIds, field: `${at}.input` });
  if (templateError !== undefined) {
    const where = templatePosition(input, `${at}.input`, templateError);
    const suffix = ` (node ${JSON.stringify(node.id)}${where === undefined ? '' : `, line ${where.line}, column ${where.column} of the value`})`;
    throw new WorkflowValidationError(templateError.field, `${templateError.field}: ${templateError.message}${suffix}`, { cause: templateError });
  }
  return { id: node.id, code: node.code, input, auth, limits: { timeoutMs, memoryBytes: Number(memory) } };
}

/**
 * Where the template of `err` starts in its string value (found by the error's field path), as a 1-based
 * line and column of that string; undefined when it cannot be told (a value with the template twice is
 * given its first).
 */
function templatePosition(input: JsonObject, prefix: string, err: TemplateError): { line: number; column: number } | undefined {
  const where: (string | number)[] = [];
  let value: string | undefined;
  const visit = (v: JsonValue): boolean => {
    if (typeof v === 'string') {
      if (formatPath(where, prefix) !== err.field) return false;
      value = v;
      return true;
    }
    const entries: [string | number, JsonValue][] =
      v === null || typeof v !== 'object' ? [] : Array.isArray(v) ? v.map((item, n) => [n, item]) : Object.keys(v).map((k) => [k, v[k] as JsonValue]);
    for (const [key, item] of entries) {
      where.push(key);
      const hit = visit(item);
      where.pop();
      if (hit) return true;
    }
    return false;
  };
  visit(input);
  const template = err.template.endsWith('…') ? err.template.slice(0, -1) : err.template;
  const index = value === undefined || template === '' ? -1 : value.indexOf(template);
  if (index === -1) return undefined;
  const before = value!.slice(0, index).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

/** Checks a workflow's name; `field` names it in messages. Returns it trimmed. */
function checkName(raw: string, field: string, limits: WorkflowLimits): string {
  const name = raw.trim();
  if (name === '') throw invalid(field, `${field} is required`);
  const nameChars = [...name].length;
  if (nameChars > limits.maxNameChars) throw invalid(field, `${field} must be at most ${limits.maxNameChars} characters, got ${nameChars}`);
  if (CONTROL.test(name)) throw invalid(field, `${field} must not contain control characters`);
  return name;
}

/** Checks a workflow's nodes in order; `field` names the list in messages (`nodes`, `workflow.nodes`). */
function checkNodes(raw: readonly Node[], field: string, limits: WorkflowLimits): NodeRecord[] {
  if (raw.length === 0) throw invalid(field, `${field} must hold at least one node`);
  if (raw.length > limits.maxNodes) {
    throw invalid(field, `${field} holds ${raw.length} nodes, over the limit of ${limits.maxNodes}`);
  }
  const seen = new Map<string, number>();
  const ids: string[] = [];
  return raw.map((node, i) => {
    const record = checkNode(node, `${field}[${i}]`, ids, seen, limits);
    seen.set(node.id, i);
    ids.push(node.id);
    return record;
  });
}

/**
 * Checks a CreateWorkflow request, in field order, and returns it as a draft. Throws a
 * WorkflowValidationError whose message names the field: `name is required`,
 * `nodes[1].id "a" is already the id of nodes[0]`,
 * `nodes[1].input.text: {{nodes.b.output}}: node "b" does not run before this node`, ...
 */
export function validateCreateWorkflow(req: CreateWorkflowRequest, limits: WorkflowLimits = DEFAULT_WORKFLOW_LIMITS): WorkflowDraft {
  const name = checkName(req.name, 'name', limits);
  checkWorkspaceName(req.workspace);
  const nodes = checkNodes(req.nodes, 'nodes', limits);

  const authMethod = authMethodFromProto(req.webhook?.authMethod ?? AuthMethod.UNSPECIFIED, 'webhook.authMethod');
  const signaturePreset = signaturePresetFromProto(req.webhook?.signaturePreset ?? SignaturePreset.UNSPECIFIED, 'webhook.signaturePreset');
  if (authMethod === 'signature' && signaturePreset === undefined) {
    throw invalid('webhook.signaturePreset', 'webhook.signaturePreset is required with AUTH_METHOD_SIGNATURE');
  }
  if (authMethod !== 'signature' && signaturePreset !== undefined) {
    throw invalid('webhook.signaturePreset', 'webhook.signaturePreset is only used with AUTH_METHOD_SIGNATURE');
  }

  if (req.rateLimitPerSecond > limits.maxRateLimitPerSecond) {
    throw invalid('rateLimitPerSecond', `rateLimitPerSecond must be at most ${limits.maxRateLimitPerSecond}, got ${req.rateLimitPerSecond}`);
  }
  const draft: WorkflowDraft = { name, workspace: req.workspace, nodes, authMethod, rateLimitPerSecond: req.rateLimitPerSecond };
  if (signaturePreset !== undefined) draft.signaturePreset = signaturePreset;
  if (overRateFromProto(req.overRate) === 'throttle') draft.overRate = 'throttle';
  return draft;
}

/** A checked UpdateWorkflow request. */
export interface WorkflowUpdate {
  id: string;
  name: string;
  nodes: NodeRecord[];
  /** The version the caller read; 0 = no check. */
  expectedVersion: number;
  /** The workspace the caller named; empty = not named. */
  workspace: string;
}

/**
 * Checks an UpdateWorkflow request: `workflow.id`, then name and nodes as CreateWorkflow checks them, the
 * field names prefixed with `workflow.` (`workflow.nodes[1].code: node "send" does not parse: …`).
 */
export function validateUpdateWorkflow(req: UpdateWorkflowRequest, limits: WorkflowLimits = DEFAULT_WORKFLOW_LIMITS): WorkflowUpdate {
  const w = req.workflow;
  if (w === undefined) throw invalid('workflow', 'workflow is required');
  checkWorkflowId(w.id, 'workflow.id');
  const name = checkName(w.name, 'workflow.name', limits);
  if (w.workspace !== '') checkWorkspaceName(w.workspace, 'workflow.workspace');
  const nodes = checkNodes(w.nodes, 'workflow.nodes', limits);
  return { id: w.id, name, nodes, expectedVersion: w.version, workspace: w.workspace };
}

/** Why `update` cannot be applied to `record` (a version or workspace that does not match), or undefined. */
export function workflowUpdateConflict(record: WorkflowRecord, update: WorkflowUpdate): { field: string; message: string } | undefined {
  if (update.workspace !== '' && update.workspace !== record.workspace) {
    return {
      field: 'workflow.workspace',
      message: `workflow.workspace cannot be changed (the workflow is in ${JSON.stringify(record.workspace)}): leave it empty or create the workflow anew`,
    };
  }
  const version = workflowVersion(record);
  if (update.expectedVersion !== 0 && update.expectedVersion !== version) {
    return {
      field: 'workflow.version',
      message: `workflow ${record.id} is at version ${version}, not ${update.expectedVersion}: it was updated meanwhile; read it again`,
    };
  }
  return undefined;
}

/** `record` with the update's name and nodes, the next version and `updatedAt`; the webhook and the rest kept. */
export function applyWorkflowUpdate(record: WorkflowRecord, update: WorkflowUpdate, now: Date): WorkflowRecord {
  return { ...record, name: update.name, nodes: update.nodes, version: workflowVersion(record) + 1, updatedAt: now.toISOString() };
}

/** `overRate` of a request: `refuse` for UNSPECIFIED and REFUSE; an unknown number is INVALID_ARGUMENT naming the field. */
export function overRateFromProto(m: OverRate, field = 'overRate'): 'refuse' | 'throttle' {
  switch (m) {
    case OverRate.UNSPECIFIED:
    case OverRate.REFUSE:
      return 'refuse';
    case OverRate.THROTTLE:
      return 'throttle';
    default:
      throw invalid(field, `${field} ${String(m)} is not a known OverRate`);
  }
}

/**
 * A new record from a checked draft: fresh workflow and webhook ids, the creation time, and the webhook's
 * authentication (a secret is generated unless the method is `none`). `secret` is the plaintext, for the
 * CreateWorkflow response only.
 */
export function createWorkflowRecord(
  draft: WorkflowDraft,
  options: { now: Date; random?: RandomBytes },
): { record: WorkflowRecord; secret: string | undefined } {
  const random = options.random ?? randomBytes;
  const auth =
    draft.authMethod === 'signature'
      ? applyWebhookAuthSettings(
          { method: 'none', secretHash: null, previousSecretHash: null, previousSecretExpiresAt: null },
          { method: 'signature', preset: draft.signaturePreset },
          { now: options.now, random },
        )
      : createWebhookAuth(draft.authMethod, random);
  return {
    record: {
      id: newWorkflowId(random),
      name: draft.name,
      workspace: draft.workspace,
      nodes: draft.nodes,
      webhook: { webhookId: newWebhookId(random), auth: auth.state },
      rateLimitPerSecond: draft.rateLimitPerSecond,
      ...(draft.overRate ? { overRate: draft.overRate } : {}),
      createdAt: options.now.toISOString(),
      version: 1,
    },
    secret: auth.secret,
  };
}

/** The webhook URL of a workflow: `{baseUrl}/api/hooks/workflows/<id>`. */
export function webhookUrl(baseUrl: string, workflowId: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/hooks/workflows/${workflowId}`;
}

/** The marker that replaces each string value of a node's `auth` in responses (as in logs). */
export const REDACTED = '[REDACTED]';

function redactStrings(v: JsonValue): JsonValue {
  if (typeof v === 'string') return REDACTED;
  if (Array.isArray(v)) return v.map(redactStrings);
  if (v !== null && typeof v === 'object') {
    const out: JsonObject = {};
    for (const key of Object.keys(v)) {
      Object.defineProperty(out, key, { value: redactStrings(v[key] as JsonValue), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return v;
}

export interface ToProtoOptions {
  /** LDBOX_BASE_URL, for the webhook URL. */
  baseUrl: string;
  /** The time against which the previous secret's grace period is judged. */
  now: Date;
  /** The plaintext secret, only in the response of the call that generated it. */
  secret?: string | undefined;
  /** Why the record's node `auth` cannot be opened (ListWorkflows): set as `unreadable`, `auth` left out. */
  unreadable?: string | undefined;
  /** How the message will be encoded (default `json`): node `input` and `auth` are built for it. */
  encoding?: ProtoEncoding | undefined;
}

/** The webhook of a record as the proto message; hashes never leave, the secret only when given. */
export function toProtoWebhook(record: WorkflowRecord, options: ToProtoOptions): Webhook {
  const auth = record.webhook.auth;
  const previous = previousSecretExpiry(auth, options.now);
  return create(WebhookSchema, {
    webhookId: record.webhook.webhookId,
    url: webhookUrl(options.baseUrl, record.id),
    authMethod: authMethodToProto(auth.method),
    secret: options.secret ?? '',
    warnings: webhookAuthWarnings(auth),
    hasSecret: hasActiveSecret(auth),
    ...(previous === undefined ? {} : { previousSecretExpiresAt: timestampFromDate(previous) }),
    signaturePreset: auth.method === 'signature' ? signaturePresetToProto(auth.signing?.preset) : SignaturePreset.UNSPECIFIED,
    hasVerifyToken: auth.verifyTokenHash !== undefined,
    deduplicateDeliveries: auth.method === 'signature' && auth.signing?.deduplicate === true,
  });
}

/** A record as the Workflow message: `auth` string values redacted, secret only when given. */
export function toProtoWorkflow(record: WorkflowRecord, options: ToProtoOptions): Workflow {
  return create(WorkflowSchema, {
    id: record.id,
    name: record.name,
    workspace: record.workspace,
    nodes: record.nodes.map((n) => {
      const node = create(NodeSchema, {
        id: n.id,
        code: n.code,
        limits: create(LimitsSchema, { timeoutMs: n.limits.timeoutMs, memoryBytes: BigInt(n.limits.memoryBytes) }),
      });
      // Set so that an own `__proto__` key (at any depth) reaches the client as data, not lost in encoding.
      const encoding = options.encoding ?? 'json';
      setStructKeepingKeys(node, NodeSchema.field.input!, n.input, encoding);
      if (options.unreadable === undefined) setStructKeepingKeys(node, NodeSchema.field.auth!, redactStrings(n.auth) as JsonObject, encoding);
      return node;
    }),
    webhook: toProtoWebhook(record, options),
    rateLimitPerSecond: record.rateLimitPerSecond,
    overRate: record.overRate === 'throttle' ? OverRate.THROTTLE : OverRate.UNSPECIFIED,
    createdAt: timestampFromDate(new Date(record.createdAt)),
    version: workflowVersion(record),
    updatedAt: timestampFromDate(new Date(record.updatedAt ?? record.createdAt)),
    unreadable: options.unreadable ?? '',
  });
}

/** The grace period of a RotateWebhookSecret request in milliseconds (unset = 24 h); checked. */
export function gracePeriodFromProto(d: Duration | undefined): number {
  return resolveGracePeriodMs(d === undefined ? undefined : durationMs(d));
}

/** Page sizes of the List RPCs: 0 means the default, more than the maximum is read as the maximum. */
export const WORKFLOW_PAGE_SIZE = Object.freeze({ default: 50, max: 500 });
export const EXECUTION_PAGE_SIZE = Object.freeze({ default: 20, max: 100 });

/** The page size to use for a request's `pageSize`. */
export function resolvePageSize(requested: number, bounds: { default: number; max: number }): number {
  if (requested <= 0) return bounds.default;
  return Math.min(requested, bounds.max);
}
