/**
 * The stored form of a workflow: JSON, with each node's `auth` sealed (src/crypto/secret-box.ts) as one
 * string `ldbox:v1:<keyId>:…` bound to `ldbox-workflows/<workflow id>/nodes/<node id>/auth`, so the value
 * cannot be opened in another workflow or node. A node whose `auth` is still a JSON object was stored before
 * encryption at rest: it is read as it is and sealed on the next write (or by `ldbox reencrypt`).
 *
 * The webhook's signing secrets (`webhook.auth.signing.secret` and `.previousSecret`, AUTH_METHOD_SIGNATURE)
 * are sealed the same way, bound to `ldbox-workflows/<workflow id>/webhook/signing-secret` (and
 * `…/previous-signing-secret`).
 *
 * Tests: test/store/workflow-encryption.test.ts.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { isSealed, isSecretBoxError, type KeyRing, sealedKeyId } from '../crypto/secret-box.js';
import type { NodeRecord, WorkflowRecord } from '../workflows/workflow-model.js';
import type { WebhookSigning } from '../workflows/webhook-secret.js';
import { decodeJson, encodeJson, SecretUnavailableError } from './store-errors.js';

/** The associated data of a node's sealed `auth`. */
export function nodeAuthContext(workflowId: string, nodeId: string): string {
  return `ldbox-workflows/${workflowId}/nodes/${nodeId}/auth`;
}

/** The associated data of the webhook's sealed signing secret (`previous`: the one in its grace period). */
export function signingSecretContext(workflowId: string, previous = false): string {
  return `ldbox-workflows/${workflowId}/webhook/${previous ? 'previous-' : ''}signing-secret`;
}

type StoredNode = Omit<NodeRecord, 'auth'> & { auth: JsonObject | string };
type StoredWorkflow = Omit<WorkflowRecord, 'nodes'> & { nodes: StoredNode[] };

/** `record` as stored: every node's `auth` and the webhook's signing secrets sealed with the current key. */
export function encodeWorkflow(record: WorkflowRecord, keys: KeyRing): Uint8Array {
  const signing = record.webhook.auth.signing;
  const stored: StoredWorkflow = {
    ...record,
    nodes: record.nodes.map((n) => ({ ...n, auth: keys.seal(JSON.stringify(n.auth), nodeAuthContext(record.id, n.id)) })),
  };
  if (signing) {
    stored.webhook = {
      ...record.webhook,
      auth: {
        ...record.webhook.auth,
        signing: {
          ...signing,
          secret: keys.seal(signing.secret, signingSecretContext(record.id)),
          previousSecret: signing.previousSecret === null ? null : keys.seal(signing.previousSecret, signingSecretContext(record.id, true)),
        },
      },
    };
  }
  return encodeJson(stored);
}

/** The webhook's signing secrets opened; throws {@link SecretUnavailableError}. */
function openSigning(stored: StoredWorkflow, keys: KeyRing): WorkflowRecord['webhook'] {
  const signing = stored.webhook.auth.signing;
  if (!signing) return stored.webhook;
  const open = (sealed: string, previous: boolean): string => {
    if (!isSealed(sealed)) throw new SecretUnavailableError(`workflow ${stored.id} webhook: the stored signing secret is not a sealed value`, undefined);
    try {
      return keys.open(sealed, signingSecretContext(stored.id, previous)).toString('utf8');
    } catch (err) {
      if (!isSecretBoxError(err)) throw err;
      throw new SecretUnavailableError(`workflow ${stored.id} webhook signing secret: ${err.message}`, err.keyId, { cause: err });
    }
  };
  const opened: WebhookSigning = {
    ...signing,
    secret: open(signing.secret, false),
    previousSecret: signing.previousSecret === null ? null : open(signing.previousSecret, true),
  };
  return { ...stored.webhook, auth: { ...stored.webhook.auth, signing: opened } };
}

/**
 * A stored workflow with its nodes' `auth` opened. Throws {@link SecretUnavailableError} (naming the
 * workflow, the node and the key id) when one cannot be opened: never plaintext of a wrong key, never garbage.
 */
export function decodeWorkflow(value: Uint8Array, keys: KeyRing): WorkflowRecord {
  const stored = decodeJson<StoredWorkflow>(value);
  return {
    ...stored,
    webhook: openSigning(stored, keys),
    nodes: stored.nodes.map((n) => {
      if (!isSealed(n.auth)) {
        if (typeof n.auth === 'string')
          throw new SecretUnavailableError(`workflow ${stored.id} node ${JSON.stringify(n.id)}: the stored auth is not a sealed value`, undefined);
        return n as NodeRecord;
      }
      try {
        const auth = JSON.parse(keys.open(n.auth, nodeAuthContext(stored.id, n.id)).toString('utf8')) as JsonObject;
        return { ...n, auth };
      } catch (err) {
        if (!isSecretBoxError(err)) throw err;
        throw new SecretUnavailableError(`workflow ${stored.id} node ${JSON.stringify(n.id)}: ${err.message}`, err.keyId, { cause: err });
      }
    }),
  };
}

/**
 * A stored workflow for routing webhooks (the gateway's cache): as {@link decodeWorkflow}, except that a
 * workflow whose node `auth` cannot be opened is returned with every node's `auth` empty, after `onUnreadable`
 * was told why. The webhook route needs only the webhook and workspace fields; the executor opens `auth`
 * itself and fails the execution with the message naming the key id. Never use these records' `auth`.
 */
export function decodeWorkflowForRouting(value: Uint8Array, keys: KeyRing, onUnreadable: (err: SecretUnavailableError) => void): WorkflowRecord {
  try {
    return decodeWorkflow(value, keys);
  } catch (err) {
    if (!(err instanceof SecretUnavailableError)) throw err;
    onUnreadable(err);
    const stored = decodeJson<StoredWorkflow>(value);
    let webhook: WorkflowRecord['webhook'];
    try {
      webhook = openSigning(stored, keys);
    } catch (e) {
      if (!(e instanceof SecretUnavailableError)) throw e;
      // No usable signing secret: signatures are refused (an empty secret never matches, see the gateway).
      const signing = stored.webhook.auth.signing!;
      webhook = {
        ...stored.webhook,
        auth: { ...stored.webhook.auth, signing: { ...signing, secret: '', previousSecret: null, previousSecretExpiresAt: null } },
      };
    }
    return { ...stored, webhook, nodes: stored.nodes.map((n) => ({ ...n, auth: {} })) };
  }
}

/** True when a stored workflow has a node `auth` in plaintext or sealed with another key than the current one. */
export function needsReencrypt(value: Uint8Array, keys: KeyRing): boolean {
  const stored = decodeJson<StoredWorkflow>(value);
  const signing = stored.webhook.auth.signing;
  const sealedValues = [signing?.secret, signing?.previousSecret ?? undefined].filter((v) => v !== undefined);
  return (
    stored.nodes.some((n) => !isSealed(n.auth) || sealedKeyId(n.auth) !== keys.current.id) ||
    sealedValues.some((v) => !isSealed(v) || sealedKeyId(v) !== keys.current.id)
  );
}
