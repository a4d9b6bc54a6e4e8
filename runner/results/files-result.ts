import { describeType, fail, isRecord, requireString } from './invalid-result-error.js';

/** One file as delivered: content decoded from `base64` or encoded from `text`. */
export interface ValidatedFile {
  fileName: string;
  mimeType: string;
  content: Uint8Array;
  isText: boolean;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Spec "File result shape": `{files: file | file[]}` where a file is `{fileName, mimeType}` with exactly
 * one of `base64` and `text`. A bare file or a bare list of files is accepted too.
 */
export function validateFilesResult(value: unknown): ValidatedFile[] {
  let files: unknown = value;
  let path = 'result';
  if (isRecord(value) && 'files' in value) {
    files = value.files;
    path = 'files';
  }
  const list = Array.isArray(files) ? files : [files];
  if (Array.isArray(files) && files.length === 0) fail(path, 'must hold at least one file');
  return list.map((f, i) => validateFile(f, Array.isArray(files) ? `${path}[${i}]` : path));
}

function validateFile(f: unknown, path: string): ValidatedFile {
  if (!isRecord(f)) fail(path, `must be a file object {fileName, mimeType, base64 | text}, got ${describeType(f)}`);
  const fileName = requireString(f.fileName, `${path}.fileName`);
  if (fileName === '') fail(`${path}.fileName`, 'must not be empty');
  const mimeType = requireString(f.mimeType, `${path}.mimeType`);
  if (mimeType === '') fail(`${path}.mimeType`, 'must not be empty');
  const hasB64 = f.base64 !== undefined && f.base64 !== null;
  const hasText = f.text !== undefined && f.text !== null;
  if (hasB64 === hasText) fail(path, hasB64 ? 'must have only one of base64 and text' : 'must have base64 or text content');
  if (hasText) {
    const text = requireString(f.text, `${path}.text`);
    return { fileName, mimeType, content: new Uint8Array(Buffer.from(text, 'utf8')), isText: true };
  }
  const b64 = requireString(f.base64, `${path}.base64`).replace(/\s+/g, '');
  if (!BASE64.test(b64)) fail(`${path}.base64`, 'is not valid base64');
  return { fileName, mimeType, content: new Uint8Array(Buffer.from(b64, 'base64')), isText: false };
}
