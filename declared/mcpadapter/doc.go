// Package mcpadapter is the host's MCP client of an existing MCP server
// declared in a NAME.mcp.json file (package protocol/decl), in the host's
// own process: the host serves the Adapter's document, changes and
// catalog through pluginsdk.Local, calls its tools and catalog requests
// itself as a supervise.Direct (CallDirect, RequestDirect: function calls
// with the caller's core.Exchange, package declared) and supervises it
// like any plugin (restarts with backoff, blue/green replacement when the
// declaration changes). An Adapter is a pluginsdk.Tool (with JSONCaller,
// ResultCaller, DocumentWatcher, Cataloger and LocalRunner) that is an
// MCP client of the server (the official Go SDK). Its Run starts the server through
// Options.Starter (package launcher, as the host starts a plugin: its own
// process group, the parent-death signal, the plugin's environment
// allow-list, policy, sandbox launcher, user and cgroup; stderr to the
// host's log under the plugin's name; spoken to over stdio with
// mcp.IOTransport, at most wire.MaxMessageSize bytes per message) or
// reaches it with the declared headers (mcp.StreamableClientTransport,
// falling back to mcp.SSEClientTransport when the first POST gets a 4xx
// status as MCP 2024-11-05 servers answer it; mcp.SSEClientTransport
// alone for "type": "sse"), initializes the session (MCP 2025-11-25,
// ProtocolVersion; a streamable-HTTP server is asked with server/discover
// first, as the SDK's client asks it: Adapter.open), lists the tools (every page) and serves them as one
// OpenTool 1.1.0 document; it follows notifications/tools/list_changed
// (the host loads the new document without a restart) and forwards calls
// and their cancellation. No process stands between the host and the
// server. Each MCP client session of the host's /mcp gets, unless the
// declaration says "sessions": "shared", an upstream session (a command:
// a process) of its own (clients.go), whose tools/list is what /mcp
// lists that client (HandleMCP "tools/list": clientTools). The shared
// session declares MCP Apps' extension (UIExtension), so that it lists
// every tool a client may be shown. The catalog's items and the results
// of resources/read and prompts/get are kept as the server wrote them
// (raw.go), as the tools are.
//
// # MCP → OpenTool
//
// The conversion (convert.go) is pure and deterministic:
//
//	MCP                          OpenTool
//	---------------------------  ---------------------------------------------------
//	server (declared name NAME)  info.title NAME, info.version serverInfo.version
//	                             (1.0.0 without one)
//	tool name                    function name: a valid name (^[a-zA-Z0-9_-]{1,64}$)
//	                             is kept; any other has each byte outside
//	                             [a-zA-Z0-9_-] replaced by "_" and is cut to 64
//	                             bytes ("ns.tool/x" → "ns_tool_x"). A clash gets the
//	                             first free "_2", "_3", ... (valid names first, then
//	                             the renamed, each in MCP name order). Calls use the
//	                             MCP name.
//	the tool as listed            mcpTool (an extension): the tool's JSON exactly
//	                             as tools/list gave it (raw.go), which /mcp
//	                             serves as the tool's definition (name
//	                             replaced by the served one; taskSupport
//	                             kept when /mcp serves tasks); the rows below are for the
//	                             OpenTool projection, OTC and export
//	title (or annotations.title) description "TITLE. DESCRIPTION (HINTS)"; HINTS
//	description, annotations     from readOnlyHint, destructiveHint (when set true)
//	                             and idempotentHint: "read-only, destructive,
//	                             idempotent"; "MCP tool NAME" when all are empty
//	title, annotations, icons,   title, annotations, icons, _meta (extensions of
//	_meta                        the document, served as they are on /mcp)
//	inputSchema                  inputSchema (an extension): the schema as
//	                             declared, which the host checks arguments
//	                             against and serves ("type": "object" when it
//	                             has none or a union with object;
//	                             {"type":"object"} for none)
//	                             and its OpenTool projection
//	                             (opentool.ProjectParameters): one parameter per
//	                             property, in name order: name, description,
//	                             schema, required (from "required")
//	  additionalProperties       additionalParameters (a boolean; a schema there
//	                             allows any member in the projection)
//	JSON Schema of a property    its projection (opentool.ProjectJSONSchema):
//	                             type (a union: its first type other than null),
//	                             description, enum, const (a one-value enum),
//	                             items, properties, required, additionalProperties;
//	                             title, format, default, minimum, pattern and the
//	                             other keywords without subschemas as they are
//	  $ref to $defs/definitions  inlined (local JSON Pointers and anchors; a
//	                             recursive one is cut)
//	  allOf                      merged
//	  anyOf/oneOf                on a schema without a type: the first branch
//	                             that is not null
//	  not, if/then/else, ...     left out of the projection
//	execution.taskSupport        not served (the SDK's Tool drops it; raw.go reads
//	                             it): "required" makes the adapter call the tool
//	                             as a task, through the Tasks extension (tasks.go)
//	                             or core tasks (coretasks.go), and refuses it when
//	                             the server declares neither;
//	                             every other value is a plain tools/call
//	outputSchema                 outputSchema as declared and the return "result"
//	                             (its projection) for the schema of an object;
//	                             another schema (SEP-2106 allows arrays and
//	                             primitives) is that of the "result" member of
//	                             the wrapped result (below), and both describe
//	                             that wrapping object
//
// No tool is left out because OpenTool cannot express its schema: what the
// projection leaves out is logged at debug level (`inputSchema.properties.x
// .type: type ["boolean","string"] projected as "boolean"`); the schema is
// served and checked as declared all the same. A tool whose input schema
// is not an object schema ("type": "string", which MCP does not allow) is
// not served: it is logged as a warning and listed in the document's
// "refused" member, which the host shows in /health (the plugin is then
// "degraded"). The server's other tools are served.
//
// # Calls
//
// Over stdio and HTTP+SSE, in a revision before 2026-07-28, the adapter
// sends each tools/call itself on the SDK session's connection and takes
// its response off it (owncall.go); over streamable HTTP, in 2026-07-28
// and for a task, the SDK's client session sends it. A plain result the
// adapter took off the connection (text blocks and isError only:
// mcpresult.Plain) is passed on as the server wrote it (CallDirect:
// host.Result.JSON; a session's call the host answers itself writes those
// bytes as its result); any other is passed on as decoded there, the one
// decoding on its way (CallDirect: host.Result.Decoded; plugin protocol
// 3): MCP clients of the host receive every content block with
// its annotations, structuredContent (as the server wrote it when a text
// block carries the same JSON), isError and _meta. OpenTool callers
// receive its projection (CallJSON, the host's internal/mcpresult):
//
//	tools/call outcome                  OpenTool
//	----------------------------------  -------------------------------------------------
//	structuredContent, an object        the result, as the server sent it (the text block
//	                                    carrying the same JSON keeps member order and
//	                                    exact numbers)
//	structuredContent, not an object    {"result": VALUE}
//	no structuredContent                {"content": [MCP content blocks], "text": TEXT},
//	                                    TEXT the text blocks joined by "\n" ("" if none)
//	isError: true                       tool error 500, message the text blocks' text
//	input required (SEP-2322)           tool error 500 (no elicitation or sampling here);
//	                                    for an MCP client of 2026-07-28 spoken for in
//	                                    2026-07-28, the result as it is (sessionless.go)
//	JSON-RPC error -32602               tool error 400 (invalid arguments), its message
//	other JSON-RPC error, connection    tool error 500 naming the server and the tool
//	closed
//	the caller cancels (ctx ends)       notifications/cancelled to the server
//	a tool that requires a task         the call made as a task of the Tasks
//	(execution.taskSupport "required";  extension (tasks.go), or of core tasks of
//	or -32021 to a plain call)          2025-11-25 when the server declares only
//	                                    those (coretasks.go), polled to its result,
//	                                    which maps as above; tasks/cancel when the
//	                                    caller cancels
//	the caller's _meta                  the tools/call _meta (its progressToken
//	                                    replaced by one of the adapter's; without
//	                                    the caller's own protocol context, SEP-2575:
//	                                    protocolVersion, clientInfo,
//	                                    clientCapabilities, logLevel, relay.go)
//	notifications/progress,             relayed to the caller of the call (relay.go:
//	notifications/message               by token; log messages to the only call in
//	                                    flight, logged when there is none or several)
//	sampling/createMessage,             relayed to the MCP client that made the only
//	elicitation/create, roots/list      call in flight, its answer back to the server;
//	                                    JSON-RPC error -32603 saying why when it
//	                                    cannot be (relay.go). The adapter declares the
//	                                    sampling, elicitation (form, url) and roots
//	                                    (listChanged) capabilities
//	roots/list outside any call         an empty list: no caller's roots; on stdio
//	                                    (Options.Sole, the host's only client) the
//	                                    request goes to that client, as do
//	                                    sampling and elicitation, and its
//	                                    notifications/roots/list_changed to the
//	                                    server; no roots fence
//	after a call whose caller's roots   notifications/roots/list_changed; the next call
//	the server got                      waits until the server asked roots/list again
//	                                    (at most 0.5 s), so that a server that keeps
//	                                    roots gives no caller another's (relay.go)
//
// # Lifecycle
//
//	server does not answer initialize   Load fails 0.5 s before the host's Load deadline
//	(or tools/list) in time             (or Run at Options.InitTimeout, 60 s): `MCP
//	                                    server "notes" did not answer initialize within
//	                                    9.5s`; the server is killed and Run returns
//	                                    that reason; the host marks the plugin failed
//	                                    with it
//	server exits or closes the session  Run returns `MCP server "notes" exited (exit
//	                                    status 3)` (a crash: the host restarts the
//	                                    plugin with backoff); a call in flight fails
//	                                    saying the server exited during it
//	a message over 64 MiB, or one that  the session ends (Run returns why) and the
//	does not decode                     server is stopped: a crash, as above
//	more than 16 of the server's        the others refused at once (-32603): a server
//	requests waiting for callers        cannot make the host hold one goroutine each
//	log messages outside calls          logged at most 20 per second (relay.go)
//	notifications/tools/list_changed    tools/list again; DocumentChanged fires when the
//	                                    document changed (the host calls Load again);
//	                                    then ListsChanged passes it on as it came, from
//	                                    any session of the server (lists.go)
package mcpadapter
