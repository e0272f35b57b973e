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
//     echo declared as notes.mcp.json, through /mcp) against a Go SDK
//     client calling it directly over stdio; and host.Call in process
//     (the plugin hop without HTTP). All in one run; a summary table with
//     calls/s, p50, p99, the host's allocations per call and the
//     host/floor ratios against the targets is printed at the end.
//   - TestSoakShort, TestSoakShortProcess (make test): a few seconds of
//     the soak (make soak, ./bench/cmd/soak) against an in-process host
//     and a real opentool-host process.
//
// The scale figures (make bench-scale) are ./bench/cmd/scale.
package bench
