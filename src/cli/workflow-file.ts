/**
 * The file of `ldbox workflows apply -f FILE`: one workflow or a list of them, in JSON (`.json`) or YAML
 * (anything else; several `---` documents are read one after the other). A workflow is written as a
 * CreateWorkflowRequest in its JSON form (`name`, `workspace`, `nodes` with `id`, `code`, `input`, `auth`,
 * `limits`; `webhook.authMethod`, `rateLimitPerSecond`, `overRate`), read strictly: an unknown field or
 * enum name is refused, naming the workflow and the field.
 *
 * Tests: test/cli/control-plane-cli.test.ts ("workflows apply").
 */
import { readFileSync } from 'node:fs';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { parseAllDocuments } from 'yaml';
import { type CreateWorkflowRequest, CreateWorkflowRequestSchema } from '../gen/ldbox/workflows/v1/workflows_pb.js';

/** A workflow file that cannot be read or does not hold workflows (a usage error: exit 2). */
export class WorkflowFileError extends Error {
  override readonly name = 'WorkflowFileError';
}

/** Reads `path` (`-` is stdin) and returns its workflows in file order. */
export function readWorkflowFile(path: string): CreateWorkflowRequest[] {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new WorkflowFileError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parseWorkflowFile(text, path);
}

/** The workflows of a file's text; `path` decides the format (`.json` is JSON, else YAML) and names the file in errors. */
export function parseWorkflowFile(text: string, path: string): CreateWorkflowRequest[] {
  const values = path.toLowerCase().endsWith('.json') ? [parseJson(text, path)] : parseYaml(text, path);
  const items = values.flatMap((v) => (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]));
  if (items.length === 0) throw new WorkflowFileError(`${path} holds no workflow`);
  return items.map((item, i) => {
    const at = items.length === 1 ? path : `${path}: workflow ${i + 1}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new WorkflowFileError(`${at}: a workflow is an object with name and nodes, got ${Array.isArray(item) ? 'a list' : JSON.stringify(item)}`);
    }
    const name = (item as { name?: unknown }).name;
    if (typeof name !== 'string' || name === '') throw new WorkflowFileError(`${at}: name is required (apply matches workflows by name)`);
    try {
      return fromJson(CreateWorkflowRequestSchema, item as JsonValue, { ignoreUnknownFields: false });
    } catch (err) {
      throw new WorkflowFileError(`${at} (${JSON.stringify(name)}): ${(err as Error).message}`);
    }
  });
}

function parseJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WorkflowFileError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

function parseYaml(text: string, path: string): unknown[] {
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) return [];
  return docs.map((doc) => {
    const err = doc.errors[0];
    if (err) throw new WorkflowFileError(`${path} is not valid YAML: ${err.message.split('\n', 1)[0]}`);
    return doc.toJS({ maxAliasCount: 100 });
  });
}
