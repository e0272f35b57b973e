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
/** A result or stream item: a plain JSON object. */
export type Result = { [key: string]: unknown } | undefined | null;

/** An error with a code sent to the caller (400, 404, 500, or your own). */
export class ToolError extends Error {
  constructor(code: number, message: string);
  code: number;
}

/** What a running call knows about itself. */
export class Context {
  constructor(name?: string, traceparent?: string);
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
}

/** A set of functions served as one OpenTool plugin. */
export class Toolkit {
  constructor(info: { title: string; version: string; description?: string });
  /** Adds a unary function; throws on a bad name, schema or a duplicate. */
  function(name: string, opts: FunctionOptions, fn: (ctx: Context, args: Args) => Result | Promise<Result>): this;
  /** Adds a streaming function: one data event per item. */
  stream(
    name: string,
    opts: FunctionOptions,
    fn: (ctx: Context, args: Args) => AsyncIterable<Result> | Iterable<Result> | Promise<AsyncIterable<Result> | Iterable<Result>>,
  ): this;
  /** The OpenTool 1.1.0 document. */
  document(): { opentool: string; info: { title: string; version: string; description?: string }; functions: object[] };
}

/** Runs the toolkit as an opentool-host plugin (handshake, gRPC services). */
export function serve(toolkit: Toolkit, opts?: { argv?: string[] }): void;

/** Writes one "[LEVEL] msg" line to stderr; the host logs it at that level. */
export function log(level: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', msg: string): void;

/** The application protocol version this SDK speaks (2). */
export const PROTOCOL_VERSION: number;
