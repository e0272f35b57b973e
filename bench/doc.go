// Package bench measures opentool-host against the floor of its two hops
// and checks it under chaos. It holds tests and benchmarks only:
//
//   - BenchmarkCall (make bench): the floor hops — a bare go-plugin gRPC
//     echo plugin (./bench/floor) and a bare net/http JSON echo on
//     loopback — and the host end to end (POST /opentool/call to the echo
//     plugin through host.New/Start and httpapi.New on 127.0.0.1),
//     sequential and with 64 concurrent keep-alive clients, 16 B and
//     64 KiB payloads, all in one run; a summary table with calls/s, p50,
//     p99, the host's allocations per call and the host/floor ratios is
//     printed at the end.
//   - TestSoakShort, TestSoakShortProcess (make test): a few seconds of
//     the soak (make soak, ./bench/cmd/soak) against an in-process host
//     and a real opentool-host process.
//
// The scale figures (make bench-scale) are ./bench/cmd/scale.
package bench
