// Package bench measures opentool-host against the floor of its two hops
// and checks it under chaos. It holds tests and benchmarks only:
//
//   - BenchmarkCall (make bench): the floor hops — a bare go-plugin gRPC
//     echo plugin (./bench/floor), a bare net/http JSON echo on loopback
//     and a raw request/response over a unix socket between two Go
//     processes (floor.StartUnix) — and the host end to end through its
//     front door (frontdoor.NewFront, as `run` serves it): POST
//     /opentool/call of the echo plugin, sequential and with 64
//     concurrent keep-alive clients, 16 B and 64 KiB payloads; POST /mcp
//     tools/call of the same plugin with one MCP session per client and
//     with --mcp-stateless; an MCP server behind the host (mcp-notes'
//     repeat declared as notes1.mcp.json in the plugins folder of a real
//     "opentool-host run" process, through its /mcp) against a Go SDK
//     client calling it directly over stdio; and host.Call in process
//     (the plugin hop without HTTP).
//   - BenchmarkMCPServerMemory (make bench): real "opentool-host run"
//     processes with 1, 10 and 50 mcp-notes servers declared, the PSS of
//     each host's process tree without the servers against the servers'
//     own, and what each added server costs. Both declare their
//     servers "sessions": "shared": every client reaches the one
//     server process measured.
//   - BenchmarkMCPServerSessions (make bench): one mcp-notes declared
//     per-client in a real "opentool-host run" process, 9 MCP client
//     sessions each with its own server process: the PSS each added
//     session costs (host and server) and the p50 of a session's first
//     call (which starts its server) against its later calls.
//   - BenchmarkMCPServerScale (make bench): the scale row, many clients of
//     one server: one mcp-notes declared in a fresh "opentool-host run"
//     process per case, in the default mode (per-client) with 1, 16, 64
//     and 256 MCP client sessions and declared shared with 64, each
//     session a Go SDK client of /mcp in the load generator: calls/s,
//     failed calls, the server processes in the host's tree and the
//     tree's RSS.
//   - BenchmarkMCPAuth (make bench): /mcp tools/call of the echo plugin
//     at 64 MCP sessions on one real "opentool-host run" process that is
//     also an OAuth resource server (an oauthtest issuer in this
//     process), with an API key and with a JWT: calls/s of both, their
//     ratio, and the JWKS fetches during the timed JWT calls (none).
//   - BenchmarkCodeMode (make bench): one workflow of 50 dependent add
//     calls on one real "opentool-host run --code-mode" process, as 50
//     MCP tools/call round trips of a Go SDK client over /mcp and as one
//     run_code: wall time, bytes returned to the client and the host
//     process's CPU per workflow; run_code's warm and cold start.
//   - TestSoakShort, TestSoakShortProcess (make test): a few seconds of
//     the soak (make soak, ./bench/cmd/soak) against an in-process host
//     and a real opentool-host process.
//
// Every benchmark runs in one make bench; a summary with calls/s, p50,
// p99, the host's allocations per call, the memory per MCP server, the
// scale row and the ratios against the targets, each against a floor or
// another case of the same run, is printed at the end (of whichever
// benchmarks ran). A target not met is reported, not a failure.
//
// The scale figures (make bench-scale) are ./bench/cmd/scale.
package bench
