import { parseWithBinaries } from '../sandbox/data-crossing.js';
import type { ResultKind } from '../sandbox/types.js';
import { validateFilesResult, type ValidatedFile } from './files-result.js';
import { validateNativeDownloadResult, type ValidatedDownload } from './native-download-result.js';
import { validateNativeSearchResult } from './native-search-result.js';

export { InvalidResultError } from './invalid-result-error.js';
export type { ValidatedFile, ValidatedDownload };

export interface ValidatedResult {
  /** The value to return as JSON, binary values as base64 strings. */
  resultJson: string;
  files?: ValidatedFile[];
  download?: ValidatedDownload;
}

/** Parses the guest's serialised result (see data-crossing.ts) and checks it against the result kind's shape. */
export function validateResult(kind: ResultKind, json: string, token: string, binaries: Uint8Array[]): ValidatedResult {
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

function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}
