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

/**
 * Parses the guest's serialised result, putting the binary values back where the guest left markers
 * (`{[token]: index}`, token random per call so user data cannot forge one), and checks it against the
 * result kind's shape. JSON.parse defines keys as own data properties, so a `__proto__` key stays data.
 */
export function validateResult(kind: ResultKind, json: string, token: string, binaries: Uint8Array[]): ValidatedResult {
  const value: unknown = JSON.parse(json, (_key, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const rec = v as Record<string, unknown>;
      const index = rec[token];
      if (typeof index === 'number' && Object.keys(rec).length === 1) return binaries[index] ?? new Uint8Array(0);
    }
    return v;
  });
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
