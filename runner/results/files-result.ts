import { describeType, fail, isRecord, ResultProblems } from './invalid-result-error.js';

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
 * one of `base64` and `text`. A bare file or a bare list of files is accepted too. Every file's problems
 * are listed in one error (ResultProblems).
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
  if (!Array.isArray(files) && !isRecord(files)) fail(path, `must be a file object {fileName, mimeType, base64 | text}, got ${describeType(files)}`);
  const problems = new ResultProblems();
  const out = list.map((f, i) => validateFile(f, Array.isArray(files) ? `${path}[${i}]` : path, problems));
  problems.throwIfAny();
  return out as ValidatedFile[];
}

function validateFile(f: unknown, path: string, problems: ResultProblems): ValidatedFile | undefined {
  if (!isRecord(f)) {
    problems.add(path, `must be a file object {fileName, mimeType, base64 | text}, got ${describeType(f)}`);
    return undefined;
  }
  const fileName = problems.nonEmptyString(f.fileName, `${path}.fileName`);
  const mimeType = problems.nonEmptyString(f.mimeType, `${path}.mimeType`);
  const hasB64 = f.base64 !== undefined && f.base64 !== null;
  const hasText = f.text !== undefined && f.text !== null;
  if (hasB64 === hasText) {
    problems.add(path, hasB64 ? 'must have only one of base64 and text' : 'must have base64 or text content');
    return undefined;
  }
  let content: Uint8Array | undefined;
  if (hasText) {
    const text = problems.string(f.text, `${path}.text`);
    if (text !== undefined) content = new Uint8Array(Buffer.from(text, 'utf8'));
  } else {
    const b64 = problems.string(f.base64, `${path}.base64`)?.replace(/\s+/g, '');
    if (b64 !== undefined && !BASE64.test(b64)) problems.add(`${path}.base64`, 'is not valid base64');
    else if (b64 !== undefined) content = new Uint8Array(Buffer.from(b64, 'base64'));
  }
  if (fileName === undefined || mimeType === undefined || content === undefined) return undefined;
  return { fileName, mimeType, content, isText: hasText };
}
