// Types of the opentool-plugin package (the Node plugin SDK of opentool-host).

/** A JSON Schema object (OpenTool's subset). */
export type Schema = { [key: string]: unknown };

/**
 * A parameter: its JSON Schema plus `required` and `description`, or an
 * OpenTool Parameter Object ({schema, required, description}) when the
 * schema is an object with its own `required` list of members.
 */
export type Parameter =
  | (Schema & { required?: boolean | string[]; description?: string })
  | { schema: Schema; required?: boolean; description?: string };

export interface FunctionOptions {
  /** What the function does; shown to the model. Required. */
  description: string;
  /** name -> JSON Schema with the extra keys `required` and `description`. */
  parameters?: { [name: string]: Parameter };
  /** The JSON Schema of the result (of one item for a stream). */
  returns?: Schema;
  /** Accept arguments the document does not declare (default false). */
  additionalParameters?: boolean;
}

/** The JSON object of arguments, checked against the parameters by the SDK. */
export type Args = { [name: string]: any };
/** A stream item, or a unary function's plain result: a JSON object. */
export type ResultObject = { [key: string]: unknown } | undefined | null;

/** MCP content annotations. */
export type Annotations = { audience?: ('user' | 'assistant')[]; priority?: number; lastModified?: string; [key: string]: unknown };
/** Options of a content block: its annotations and _meta. */
export interface BlockOptions {
  annotations?: Annotations;
  meta?: { [key: string]: unknown };
}
/** An MCP content block (MCP 2025-11-25 "Tools", Tool Result). */
export type ContentBlock =
  | { type: 'text'; text: string; annotations?: Annotations; _meta?: object }
  | { type: 'image' | 'audio'; data: string; mimeType: string; annotations?: Annotations; _meta?: object }
  | { type: 'resource_link'; uri: string; name: string; title?: string; description?: string; mimeType?: string; size?: number; annotations?: Annotations; _meta?: object }
  | { type: 'resource'; resource: { uri: string; mimeType?: string; text?: string; blob?: string }; annotations?: Annotations; _meta?: object };
/** Bytes for image, audio and blob: encoded by the SDK; a string is taken as base64. */
export type Bytes = Buffer | Uint8Array | ArrayBuffer | string;

/** A text block. */
export function text(text: string, opts?: BlockOptions): ContentBlock;
/** An image block: the image's bytes (base64-encoded by the SDK) and MIME type. */
export function image(data: Bytes, mimeType: string, opts?: BlockOptions): ContentBlock;
/** An audio block: the audio's bytes (base64-encoded by the SDK) and MIME type. */
export function audio(data: Bytes, mimeType: string, opts?: BlockOptions): ContentBlock;
/** A resource link block. */
export function resourceLink(link: { uri: string; name: string; title?: string; description?: string; mimeType?: string; size?: number } & BlockOptions): ContentBlock;
/** An embedded resource block: exactly one of text and blob. */
export function embeddedResource(r: { uri: string; mimeType?: string; text?: string; blob?: Bytes } & BlockOptions): ContentBlock;

/**
 * A unary function's result as MCP says it: MCP clients of the host get it
 * as it is, other callers its projection (project()).
 */
export class Result {
  constructor(r?: { content?: (ContentBlock | string)[] | ContentBlock | string; structuredContent?: unknown; isError?: boolean; meta?: { [key: string]: unknown } });
  content: ContentBlock[];
  structuredContent?: unknown;
  isError: boolean;
  meta?: { [key: string]: unknown };
  /** The MCP CallToolResult. */
  toJSON(): { content: ContentBlock[]; structuredContent?: unknown; isError?: true; _meta?: object };
  /** The text blocks' text joined by newlines. */
  text(): string;
  /** The OpenTool result object OpenTool callers get; throws ToolError(500) when isError. */
  project(): { [key: string]: unknown };
}

/** MCP's log levels. */
export type LogLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

/** An error with a code sent to the caller (400, 404, 500, or your own). */
export class ToolError extends Error {
  constructor(code: number, message: string);
  code: number;
}

/** A JSON-RPC error answering a request to the client (-32601: no client can answer). */
export class RPCError extends Error {
  constructor(code: number, message: string, data?: unknown);
  code: number;
  data?: unknown;
}

/** What a running call knows about itself, and how it talks to its caller. */
export class Context {
  constructor(name?: string, traceparent?: string, meta?: { [key: string]: unknown }, peer?: object | null);
  /** The function's name. */
  readonly name: string;
  /** The caller's W3C traceparent (the host's execute_tool span), or "". */
  readonly traceparent: string;
  /** Aborted when the host cancels the call or its stream breaks. */
  readonly signal: AbortSignal;
  /** True once the call is cancelled. */
  readonly cancelled: boolean;
  /** Waits ms milliseconds; resolves true early when the call is cancelled. */
  sleep(ms: number): Promise<boolean>;
  /** Marks the call cancelled (the SDK does this; tests may too). */
  cancel(): void;
  /** The _meta of the MCP caller's tools/call ({} for none). */
  readonly meta: { [key: string]: unknown };
  /** Sends an MCP notification to the caller; false when nobody takes it (protocol 2, the call is over). */
  notify(method: string, params?: { [key: string]: unknown }): boolean;
  /** notifications/progress, when the caller asked for progress; true when sent. */
  progress(progress: number, total?: number, message?: string): boolean;
  /** notifications/message to an MCP caller (filtered by its logging/setLevel); true when sent. */
  log(level: LogLevel, data: unknown, logger?: string): boolean;
  /** Sends an MCP request to the client that made the call; rejects with an RPCError. */
  request(method: string, params?: { [key: string]: unknown }): Promise<{ [key: string]: any }>;
  /** elicitation/create: resolves to {action, content}. */
  elicit(message: string, requestedSchema: Schema): Promise<{ action: 'accept' | 'decline' | 'cancel'; content?: { [key: string]: unknown } }>;
  /** sampling/createMessage with MCP's params (a string message is a user text message). */
  createMessage(params: { messages: (string | { role: string; content: unknown })[]; maxTokens: number; [key: string]: unknown }): Promise<{ [key: string]: any }>;
  /** roots/list: resolves to {roots: [{uri, name}]}. */
  listRoots(): Promise<{ roots: { uri: string; name?: string }[] }>;
}

/** A set of functions served as one OpenTool plugin. */
export class Toolkit {
  constructor(info: { title: string; version: string; description?: string });
  /** Adds a unary function (a plain object or a Result); throws on a bad name, schema or a duplicate. */
  function(name: string, opts: FunctionOptions, fn: (ctx: Context, args: Args) => ResultObject | Result | Promise<ResultObject | Result>): this;
  /** Adds a streaming function: one data event per item. */
  stream(
    name: string,
    opts: FunctionOptions,
    fn: (ctx: Context, args: Args) => AsyncIterable<ResultObject> | Iterable<ResultObject> | Promise<AsyncIterable<ResultObject> | Iterable<ResultObject>>,
  ): this;
  /** The OpenTool 1.1.0 document. */
  document(): { opentool: string; info: { title: string; version: string; description?: string }; functions: object[] };
}

/** Runs the toolkit as an opentool-host plugin (handshake, gRPC services). */
export function serve(toolkit: Toolkit, opts?: { argv?: string[] }): void;

/** Writes one "[LEVEL] msg" line to stderr; the host logs it at that level. */
export function log(level: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', msg: string): void;

/** The newest application protocol version this SDK speaks (3). */
export const PROTOCOL_VERSION: number;
/** The application protocol versions this SDK speaks ([2, 3]); serve() answers the highest the host offers. */
export const PROTOCOL_VERSIONS: readonly number[];
