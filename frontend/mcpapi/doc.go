// Package mcpapi serves every function of a host.Host to Model Context
// Protocol clients with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp): over streamable HTTP at
// /mcp (Server.Handler, next to /opentool and /otc, behind the same API
// keys) and over stdio (Server.MCP connected with Server.Stdio of an
// mcp.StdioTransport, the `opentool-host mcp` command).
//
// One call travels:
//
//	tools/call (decoded by the SDK)  → Server.handler    (call.go), raw arguments
//	  → host.Host.CallResult /       the host's one call path: route, validate
//	    StreamCall
//	                                 the arguments (argcheck, the one validator:
//	                                 the SDK validates nothing for raw tools),
//	                                 timeout, plugin
//	  ← result object / *core.Error  → Server.answer / Server.callError
//
// What maps to what (MCP 2025-06-18 and later, "Server Features: Tools"):
//
//	OpenTool                       MCP
//	mcpTool (an extension: an      the tool's definition as its server listed
//	MCP server's tool as listed,   it, every member kept (description,
//	declared plugins only)         annotations, execution, _meta, icons,
//	                               members of later revisions), but "name":
//	                               the served name (a policy prefix,
//	                               --prefix-collisions); execution.taskSupport
//	                               kept with Config.Tasks, left out without
//	                               (the host runs such a tool's tasks
//	                               itself: package tasklayer); tools/list writes
//	                               it raw (toolList), to a client session as
//	                               its own upstream session lists it, to a
//	                               2026-07-28 client as a client with its
//	                               _meta identity is listed it
//	                               (clientDefs); the rows below build what
//	                               the SDK routes calls by and every other
//	                               plugin's definition
//	catalog items, resources/read  as the plugin (its server) wrote them,
//	and prompts/get results        over the SDK's result (package overlay)
//	function name, description     tool name, description
//	title, annotations, icons,     title, annotations, icons, _meta, as the
//	_meta (extensions)             plugin (an MCP server) declares them
//	inputSchema (an extension)     inputSchema, as declared (an MCP server's
//	                               own, a Go SDK function's reflected schema)
//	parameters, without one        inputSchema {"type":"object","properties",
//	                               "required"[,"additionalProperties"]}, $refs
//	                               inlined, the extra keywords of the schemas
//	                               ("minimum", ...) kept:
//	                               opentool.ParametersJSONSchema, as export
//	                               and argcheck build it
//	outputSchema (an extension)    outputSchema, as declared
//	return, when an object schema  outputSchema (MCP requires type object;
//	                               a return schema of another type, as the
//	                               reference mock's, gives none)
//	result object                  structuredContent, plus one text block with
//	                               the same JSON ("Structured Content")
//	MCP result (plugin protocol 3: the result as the plugin returned it
//	an MCP server behind the host, (host.Host.CallResult): content blocks with
//	a plugin's content blocks)     annotations, structuredContent, isError, _meta
//	stream function                a tool whose result collects the items:
//	                               structuredContent {"items":[ITEM,...]},
//	                               outputSchema {"type":"object","properties":
//	                               {"items":{"type":"array"[,"items":ITEM]}},
//	                               "required":["items"]}; at most
//	                               Config.MaxResultBytes in all
//
// Errors, translated in one place (Server.callError):
//
//	tool error (the plugin's 400/500)  isError result, text = the tool's message
//	invalid arguments                  isError result, text "invalid params: PATH:
//	                                   FAULT; ..." (a tool execution error, as the
//	                                   2025-11-25 revision asks, SEP-1303, and as
//	                                   the SDK's own typed handlers answer, so that
//	                                   the model can correct its call)
//	host-side failure (plugin exited,  isError result, text naming the plugin, the
//	failed, stopped, busy, timeout,    function and what happened
//	canceled, result rejected,
//	transport)
//	unknown tool                       JSON-RPC error -32602 "unknown tool "NAME"",
//	                                   as the SDK answers for tools it does not know
//
// Every isError result carries _meta["opentool-host/error"] (ErrorMetaKey)
// with the kind, the plugin, the tool's code, the exit status, the
// argument faults and whether a retry may succeed.
//
// Progress (MCP "Utilities: Progress"): when a tools/call of a streaming
// function (or call_tool naming one) carries a progress token, each item
// sends one notifications/progress on the request's stream: progress =
// items so far (no total), message = the item's JSON (items over 4 KiB:
// "item N (SIZE bytes)"); the plugin's own progress of such a call is
// dropped (host.CollectItems), so that each value comes once, increasing.
//
// Cancellation (MCP "Utilities: Cancellation"): the handler's context
// goes into the host call, so when it ends the host cancels the call in
// the plugin exactly as for an HTTP disconnect on /opentool. The SDK ends
// it on notifications/cancelled over stdio and within an HTTP session,
// and, without sessions, when the POST carrying the call ends (the SDK
// does that for 2026-07-28 clients with PropagateRequestCancellation;
// this package does it for older clients, httpguard.BindRequest). A stateless
// notifications/cancelled arrives on a POST of its own, where nothing
// knows the call; clients that cancel close the call's POST.
//
// A definition the SDK refuses (an invalid x-mcp-header annotation,
// SEP-2243) is logged and not listed; the other tools are.
//
// Resources, resource templates, prompts and completion of the plugins'
// MCP catalogs (plugin protocol 3: an MCP server behind the host) are
// served beside the tools; catalog.go has the table. A plugin's messages
// during a call (progress, log messages, sampling, elicitation, roots)
// reach the client that made it; exchange.go has that table.
//
// Tasks (Config.Tasks; the MCP Tasks extension, io.modelcontextprotocol/tasks,
// https://github.com/modelcontextprotocol/ext-tasks): a tools/call whose
// _meta declares the extension and outlives --task-after is answered
// with a CreateTaskResult while the call goes on; tasks/get, tasks/cancel
// and tasks/update answer for it on any replica sharing the task store;
// a subscriptions/listen naming it gets notifications/tasks when it ends.
// Package tasklayer serves them, and the core tasks of 2025-11-25, as
// middleware of this package's SDK server; its extension.go has the
// table.
//
// Tool list: Follow waits on host.Host.Changed and adds, replaces and
// removes tools, comparing definitions, so that the SDK sends
// notifications/tools/list_changed when the served tools changed (a
// plugin restart changes none), and when a declared MCP server sent its
// own, as it came (lists.go). 2026-07-28 clients receive it
// over subscriptions/listen, older ones over stdio or a session's GET
// stream (HTTPOptions.Sessions); a session of a restricted API key only
// when it may see what changed (listviews.go). A client session's
// tools/call of an MCP server's tool is held to the tools its own
// upstream session was listed (package clientview).
//
// Revisions over HTTP: clients of 2025-06-18, 2025-11-25 (and older) and
// 2026-07-28 are served with and without HTTPOptions.Sessions. A
// 2026-07-28 request has no session (SEP-2575): with sessions it goes to
// a second, stateless SDK handler (http.go, sessionless), as every request
// does without them; the SDK checks its required headers. A plugin's
// question to such a client becomes an input_required round
// (package rounds), or -32021 when the client did not declare the
// capability (exchange.go). A plugin's own round (pluginsdk.InputRequired:
// its keys, its requestState) reaches such a client as written, and is
// answered by the host for an older client with a session
// (package rounds).
//
// The layers around the SDK server are packages of their own, each
// knowing the narrow interface it is given, not the Server:
//
//	package        its job
//	envelope       a POST's JSON-RPC envelope, checked before the SDK
//	               decodes it, and what the handler routes by
//	respond        the response writers: the write deadline, a call's
//	               response held for the end of the response once the
//	               host's own outermost middleware saw it returned
//	               (respond.Marks), the SDK's plain-text refusals as
//	               JSON-RPC errors
//	channels       a session's channels to its client outside a request
//	               (its GET stream, the stdio connection)
//	subscriptions  resources/subscribe and unsubscribe, by path, and
//	               which session an update goes to
//	clientview     a client's tools/call held to the tools it was shown
//	overlay        a plugin's catalog results as the plugin wrote them
//	rounds         multi-round-trip requests (SEP-2322)
//	tasklayer      MCP tasks in both dialects
package mcpapi
