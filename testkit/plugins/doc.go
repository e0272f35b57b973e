// Package testplugins holds plugins that exist only for tests and
// benchmarks: each folder is a main package built by the tests.
//
//   - faulty: functions that panic, exit, hang, sleep, spawn a child, echo,
//     return their environment,
//     and count the sleeps in flight and those ended by cancellation.
//   - garbage: writes garbage to stdout before the handshake.
//   - baddoc: Load returns an invalid document.
//   - crashloop: exits shortly after the handshake, every time.
//   - echo: one function "echo" that returns its arguments (benchmarks).
//   - collide: declares "add", colliding with the calculator plugin.
//   - rogue: returns forged, truncated, non-object and oversized results.
//   - strict: one pluginsdk.Func whose "mode" must be "safe".
//   - bounded: one pluginsdk.Func whose input has tag constraints
//     (minimum, maximum, pattern, default, minLength) and a type union,
//     checked by nothing but the host.
//   - badchannel: offers the data channel, then answers calls for ids
//     the host never sent.
//   - rich: a Go SDK plugin of protocol 3: content blocks (ResultFunc),
//     progress and log messages, an elicitation request.
//   - rounds: a Go SDK plugin whose functions and prompt ask their MCP
//     client in input_required rounds of their own (SEP-2322,
//     pluginsdk.InputRequired), with a signed requestState.
//   - sdkstrict: the argument strictness fixture of the Go SDK, with its
//     Python and Node twins beside it (opentool-plugin-pystrict,
//     opentool-plugin-nodestrict): the functions of
//     testdata/sdk-strictness.json, each returning what it received.
//   - intruder: finds its neighbours' go-plugin sockets in
//     /proc/self/net/unix and tries Invoke, Load and Shutdown on them,
//     in plaintext and with a TLS certificate of its own.
//   - noauth: served as an SDK without host authentication would (plain
//     go-plugin, no AutoMTLS): no certificate in its handshake.
//   - sessionmcp: an MCP server (Go SDK, stdio) whose "whoami" reports
//     what its client session shows it (clientInfo, extensions, roots,
//     log level, its pid) and whose "emit" logs a marker after the call.
//   - taskfns: a Go SDK plugin whose functions require or forbid a task
//     (pluginsdk.WithTaskSupport), ask for input during one, or fail
//     with a JSON-RPC error (pluginsdk.ProtocolError).
//   - declared: not a program: the stand-in for declared.Serve in host
//     tests (core.Config.Declared).
//   - hostilemcp: an MCP server over stdio, written by hand, that attacks
//     its client when its tool "attack" is called: a 1 GiB line, deeply
//     nested JSON, invalid UTF-8, a storm of notifications or of
//     requests, garbage, an exit, a hang.
//   - verbatimmcp: an MCP server over stdio, written by hand, whose
//     results (tools/list, resources/list, resources/read, prompts/get,
//     ...) are those of the JSON file it is given, as written (members
//     no SDK type holds included).
//   - mcpapps: not a Go program: server.mjs, an MCP Apps server (Node):
//     ext-apps' basic-server-vanillajs example whose UI tool is listed
//     only to clients that declare io.modelcontextprotocol/ui
//     (getUiCapability); its npm packages are the conformance suite's.
package testplugins
