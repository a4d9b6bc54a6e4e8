import { describeType, fail, isRecord, requireString } from './invalid-result-error.js';

export interface ValidatedDownload {
  fileName: string;
  mimeType: string;
  content: Uint8Array;
}

/** Spec "Native download result": `{fileName, mimeType, buffer}`, `buffer` being the bytes of an ld.request response. */
export function validateNativeDownloadResult(value: unknown): ValidatedDownload {
  if (!isRecord(value)) fail('result', `must be {fileName, mimeType, buffer}, got ${describeType(value)}`);
  const fileName = requireString(value.fileName, 'fileName');
  if (fileName === '') fail('fileName', 'must not be empty');
  const mimeType = requireString(value.mimeType, 'mimeType');
  if (mimeType === '') fail('mimeType', 'must not be empty');
  if (!(value.buffer instanceof Uint8Array)) {
    fail('buffer', `must be an ArrayBuffer or Uint8Array (the buffer of an ld.request response), got ${describeType(value.buffer)}`);
  }
  return { fileName, mimeType, content: value.buffer };
}
