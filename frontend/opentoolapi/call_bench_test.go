package opentoolapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// BenchmarkCallCalculatorAdd measures one POST /opentool/call of
// calculator.add through a real host and a real plugin process, over
// loopback HTTP with keep-alive, one call at a time.
func BenchmarkCallCalculatorAdd(b *testing.B) {
	dir := b.TempDir()
	testkit.InstallPlugin(b, dir, "calculator", "./plugins/calculator")
	h, err := host.New(core.Config{Dir: dir, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	}()
	url := testkit.Serve(b, route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "bench"}).Routes())) + "/opentool/call"
	const body = `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"1"}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func() {
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(out), `"result":{"result":3}`) {
			b.Fatalf("unexpected response %s", out)
		}
	}
	post()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post()
	}
}
