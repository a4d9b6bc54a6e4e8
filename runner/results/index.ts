import { validateFilesResult, type ValidatedFile } from './files-result.js';
import { validateNativeDownloadResult, type ValidatedDownload } from './native-download-result.js';
import { validateNativeSearchResult } from './native-search-result.js';

import { InvalidResultError } from './invalid-result-error.js';
import { jsonShape } from '../../src/json/json-shape.js';

export { InvalidResultError, jsonShape };
export type { ValidatedFile, ValidatedDownload };

/** How the returned value is checked and delivered (mirrors ldbox.runner.v1.ResultKind). */
export type ResultKind = 'generic' | 'files' | 'native-search' | 'native-download';

/**
 * The guest's serialised result as the sandbox read it (runner/sandbox/data-crossing.ts): its JSON text,
 * whether that text is plain JSON (no binary or non-finite markers), and how to parse it with its
 * binary values put back.
 */
export interface SerialisedResult {
  readonly json: string;
  readonly plain: boolean;
  parse(): unknown;
}

export interface ValidatedResult {
  /** The value to return as JSON, binary values as base64 strings. */
  resultJson: string;
  files?: ValidatedFile[];
  download?: ValidatedDownload;
}

/**
 * Parses the guest's serialised result (see data-crossing.ts) and checks it against the result kind's
 * shape. The shape is bounded before anything is built from it (MAX_RESULT_DEPTH, MAX_RESULT_ITEMS), so
 * a result of millions of tiny values cannot hold the worker or its memory. A generic result without
 * binary values is already the JSON to deliver and is passed on as it is, not parsed and written again.
 */
export function validateResult(kind: ResultKind, result: SerialisedResult): ValidatedResult {
  const { json } = result;
  const shape = jsonShape(json);
  if (shape.depth > MAX_RESULT_DEPTH) {
    throw new InvalidResultError(
      `the result is nested ${shape.depth} levels deep, over the limit of ${MAX_RESULT_DEPTH}: flatten it or return it as a JSON string`,
    );
  }
  if (shape.items > MAX_RESULT_ITEMS) {
    throw new InvalidResultError(
      `the result holds ${shape.items} values, over the limit of ${MAX_RESULT_ITEMS}: return fewer, larger values (e.g. CSV text) or write the data elsewhere`,
    );
  }
  if (kind === 'generic' && result.plain) return { resultJson: json };
  const value = result.parse();
  switch (kind) {
    case 'generic':
      return { resultJson: toJson(value) };
    case 'files':
      return { resultJson: toJson(value), files: validateFilesResult(value) };
    case 'native-search':
      return { resultJson: toJson(validateNativeSearchResult(value)) };
    case 'native-download': {
      const download = validateNativeDownloadResult(value);
      return { resultJson: toJson({ fileName: download.fileName, mimeType: download.mimeType }), download };
    }
  }
}

/**
 * The deepest nesting of arrays/objects a result may have. Each JSON level is up to three nested
 * protobuf messages in the response (Value → Struct → map entry), and the protobuf runtimes of C++, Java
 * and Python stop decoding at 100 nested messages: 32 levels (3 × 32 + ExecuteResponse + the innermost
 * Value = 98) is the most every client can read.
 */
export const MAX_RESULT_DEPTH = 32;

/**
 * The most values (array elements and object members, nested ones included) a result may hold. Each
 * becomes a protobuf message on the way out; ~1M keeps encoding a maximal result near 0.1–0.3 s of the
 * worker and its heap within tens of MB, while 100k rows of 10 columns still fit.
 */
export const MAX_RESULT_ITEMS = 1_000_000;

function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}
