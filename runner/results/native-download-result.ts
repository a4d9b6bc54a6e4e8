import { describeType, fail, isRecord, ResultProblems } from './invalid-result-error.js';

export interface ValidatedDownload {
  fileName: string;
  mimeType: string;
  content: Uint8Array;
}

/**
 * Spec "Native download result": `{fileName, mimeType, buffer}`, `buffer` being the bytes of an ld.request
 * response. Every field at fault is listed in one error (ResultProblems).
 */
export function validateNativeDownloadResult(value: unknown): ValidatedDownload {
  if (!isRecord(value)) fail('result', `must be {fileName, mimeType, buffer}, got ${describeType(value)}`);
  const problems = new ResultProblems();
  const fileName = problems.nonEmptyString(value.fileName, 'fileName');
  const mimeType = problems.nonEmptyString(value.mimeType, 'mimeType');
  if (!(value.buffer instanceof Uint8Array)) {
    problems.add('buffer', `must be an ArrayBuffer or Uint8Array (the buffer of an ld.request response), got ${describeType(value.buffer)}`);
  }
  problems.throwIfAny();
  return { fileName: fileName!, mimeType: mimeType!, content: value.buffer as Uint8Array };
}
