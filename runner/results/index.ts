import { parseWithBinaries } from '../sandbox/data-crossing.js';
import type { ResultKind } from '../sandbox/types.js';
import { validateFilesResult, type ValidatedFile } from './files-result.js';
import { validateNativeDownloadResult, type ValidatedDownload } from './native-download-result.js';
import { validateNativeSearchResult } from './native-search-result.js';

import { InvalidResultError } from './invalid-result-error.js';

export { InvalidResultError };
export type { ValidatedFile, ValidatedDownload };

export interface ValidatedResult {
  /** The value to return as JSON, binary values as base64 strings. */
  resultJson: string;
  files?: ValidatedFile[];
  download?: ValidatedDownload;
}

/** Parses the guest's serialised result (see data-crossing.ts) and checks it against the result kind's shape. */
export function validateResult(kind: ResultKind, json: string, token: string, binaries: Uint8Array[]): ValidatedResult {
  const depth = jsonDepth(json);
  if (depth > MAX_RESULT_DEPTH) {
    throw new InvalidResultError(`the result is nested ${depth} levels deep, over the limit of ${MAX_RESULT_DEPTH}`);
  }
  const value = parseWithBinaries(json, token, binaries);
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
 * Protobuf decoders in other languages stop at 100 levels of nesting (C++, Go, Java), and deep values
 * overflow recursive encoders: a result deeper than this is refused rather than half-delivered.
 */
export const MAX_RESULT_DEPTH = 100;

/** The deepest nesting of arrays/objects in JSON text, counted without parsing (strings skipped). */
export function jsonDepth(json: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}
