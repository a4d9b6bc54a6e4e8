/**
 * Editor declarations for ldbox integration code: the globals the sandbox gives every call.
 * Reference it from a code file with `/// <reference path="…/types/ld.d.ts" />`, or list it in a
 * jsconfig.json/tsconfig.json `files`. Shapes follow the specification's "Sandbox functions".
 */

/** The call's data: `input` (values passed to the function) and `auth` (the integration's secrets). */
declare const data: {
  readonly input: Record<string, any>;
  /** Every string value here is shown as [REDACTED] in logs and error messages. */
  readonly auth: Record<string, any>;
};

declare namespace ld {
  type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  type ResponseType = 'json' | 'text' | 'stream' | 'binary';

  interface RequestOptions {
    method: HttpMethod;
    /** A full http(s) URL. Private, loopback and metadata addresses are refused unless the operator allows them. */
    url: string;
    headers?: Record<string, string>;
    /** Merged into the URL's query string. */
    params?: Record<string, string | number | boolean>;
    /**
     * An object is sent as JSON (form-encoded when Content-Type is application/x-www-form-urlencoded),
     * a string as is, a FormData as multipart/form-data, bytes as is.
     */
    body?: Record<string, unknown> | unknown[] | string | FormData | Uint8Array | ArrayBuffer;
    /** `stream` and `binary` are for file downloads. */
    responseType?: ResponseType;
    /** Per-request timeout in ms; never longer than the call's own time limit. */
    timeout?: number;
  }

  /** Non-2xx statuses are results, not errors. */
  interface TextResponse {
    status: number;
    headers: Record<string, string>;
    /** The body parsed as JSON; undefined when it is not JSON. */
    json: any;
    text: string;
  }

  interface BinaryResponse {
    status: number;
    headers: Record<string, string>;
    buffer: ArrayBuffer;
    /** True for a 2xx status. */
    success: boolean;
  }

  interface CloudRequestOptions extends Omit<RequestOptions, 'body' | 'params'> {
    body?: Record<string, unknown> | string | Uint8Array | number[];
    region: string;
    service: string;
    credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  }

  type Compression = 'gzip' | 'snappy' | 'brotli' | 'lz4' | 'zstd' | 'uncompressed';

  interface ConversionResult {
    base64: string;
    success: boolean;
    /** Set when success is false. */
    error?: string;
  }

  // What the code returns, by result kind (runner.proto ResultKind; spec "File result shape", "Native search
  // integration result", "Native download result"). `ldbox check FILE.js --kind native-search` checks the
  // returned value against these; the runner checks the same at run time (runner/results).
  /** A date value of a result: a Date, an ISO-8601 string or epoch milliseconds (emitted as ISO-8601 UTC). */
  type DateValue = Date | string | number;

  /** One item of a native search result. Required strings must not be empty; optional fields may be null. */
  interface NativeSearchItem {
    url: string;
    documentId: string;
    title: string;
    mimeType: string;
    lastSeenByUser: DateValue;
    createdDate: DateValue;
    lastModifiedByAnyone: DateValue;
    author?: { id: string; name: string; imgUrl?: string | null } | null;
    /** Treated as absent unless id, name and the date all have a value. */
    lastModifiedByUserId?: { id?: string | null; name?: string | null; lastModifiedByUserIdDate?: DateValue | null } | null;
    parent?: {
      id: string;
      title?: string | null;
      url?: string | null;
      type?: string | null;
      driveId?: string | null;
      siteId?: string | null;
      listId?: string | null;
      listItemId?: string | null;
    } | null;
  }
  /** `--kind native-search`: a list of items, or `{items: [...]}`. */
  type NativeSearchResult = NativeSearchItem[] | { items: NativeSearchItem[] };

  /** One file of a files result: its name, its type and exactly one of `base64` and `text`. */
  type FileItem = { fileName: string; mimeType: string } & ({ base64: string; text?: null } | { text: string; base64?: null });
  /** `--kind files`: a file, a list of files, or `{files: …}` holding either. */
  type FilesResult = FileItem | FileItem[] | { files: FileItem | FileItem[] };

  /** `--kind native-download`: `buffer` is the `buffer` of an `ld.request({responseType: 'binary'})` response. */
  interface NativeDownloadResult {
    fileName: string;
    mimeType: string;
    buffer: ArrayBuffer | Uint8Array;
  }

  /** Writes values to the call's logs; auth values are redacted. */
  function log(...args: unknown[]): void;
  /** Pauses for 0–30000 ms; anything else throws a RangeError. */
  function wait(ms: number): Promise<void>;

  function request(options: RequestOptions & { responseType: 'stream' | 'binary' }): Promise<BinaryResponse>;
  function request(options: RequestOptions): Promise<TextResponse>;
  /** A SigV4-signed request. */
  function cloudRequest(options: CloudRequestOptions & { responseType: 'stream' | 'binary' }): Promise<BinaryResponse>;
  function cloudRequest(options: CloudRequestOptions): Promise<TextResponse>;
  /** The same as cloudRequest, under the name other platforms use. */
  const awsRequest: typeof cloudRequest;

  interface Csv2ParquetOptions {
    /** Default `'zstd'`. */
    compression?: Compression;
    /** One character, default `','`: `'\t'`, `';'`, `'|'`, … Not `"` or a line break. */
    delimiter?: string;
    /** 1–16 characters: a line that starts with it is skipped (before the header too); inside a line it is data. */
    comment?: string;
    /** Records with fewer fields than the header get nulls for the rest (default false: such a record is an error). */
    padShortRows?: boolean;
    /**
     * Default true: a column of ISO dates (`2024-02-29`) becomes a DATE column, of ISO date-times
     * (`2024-02-29T12:34:56.5`, `2024-02-29 12:34:56+01`) a TIMESTAMP column (µs, or ns for 7–9 fraction
     * digits; UTC when the cells carry a zone). false keeps them as text.
     */
    inferDates?: boolean;
  }

  /**
   * Column types are inferred (int64, float64, boolean, date, timestamp, string, lists). A bad option throws (TypeError /
   * RangeError); bad data gives `success: false`, e.g. a one-column header that holds tabs or `;`.
   */
  function csv2parquet(csvText: string, options?: Csv2ParquetOptions): ConversionResult;
  /**
   * The CSV comes back base64-encoded, always `,`-separated. Written so that csv2parquet reads it back
   * with the same column types: whole floats as `1.0`, int64 exactly, lists as `[1, 2]`, dates as
   * `2024-02-29`, timestamps as ISO 8601 with their full fraction (`Z` when zoned).
   */
  function parquet2csv(base64Parquet: string): ConversionResult;
  /** Arrow IPC stream bytes in, base64 Parquet out. Throws on bad input. */
  function arrow2parquet(buffer: Uint8Array | ArrayBuffer, options?: { compression?: Compression }): string;
  /** Header = union of keys in first-seen order; nested values as JSON. Throws on bad input. */
  function json2csv(jsonData: Record<string, unknown>[]): string;

  /** The trimmed query when it is one non-empty statement; throws otherwise. */
  function validateSqlQuery(query: string): string;
  /** The trimmed query when every statement only reads (SELECT, SHOW, DESCRIBE, EXPLAIN); throws otherwise. */
  function ensureReadOnlySqlQuery(query: string): string;

  /** RSA-SHA256 signature of `data` with a PKCS#1 or PKCS#8 PEM key. */
  function signWithRS256(data: string, privateKey: string, options?: { encoding?: 'base64' | 'hex' }): { signature: string };
}

/** Multipart form data for ld.request. */
declare class FormData {
  append(name: string, value: string | Uint8Array | ArrayBuffer): void;
  /** A file part: its content as base64. */
  append(name: string, base64Content: string, fileName: string): void;
}

/** Minimal Buffer: only `from`, and it returns a Uint8Array (no base64 toString: use btoa/atob). */
declare const Buffer: {
  from(source: number[] | Uint8Array | ArrayBuffer): Uint8Array;
};

/** Decodes base64 to a binary string. */
declare function atob(base64: string): string;
/** Encodes a binary (Latin-1) string to base64. */
declare function btoa(binary: string): string;
