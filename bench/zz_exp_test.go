package bench

import (
	"context"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/floor"
	"github.com/opentool-host/opentool-host/bench/harness"
)

func TestZZGRPCSizes(t *testing.T) {
	bin, err := harness.Build("./bench/floor/plugin", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := floor.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{8000, 16000, 16300, 16500, 20000, 24000, 28000, 32000, 32700, 32800, 40000} {
		p := harness.Params(n)
		var lats []time.Duration
		for i := 0; i < 2000; i++ {
			t0 := time.Now()
			if _, err := c.Call(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			lats = append(lats, time.Since(t0))
		}
		harness.SortDurations(lats)
		t.Logf("%7d B: p50 %v p90 %v", n, harness.Percentile(lats, 50), harness.Percentile(lats, 90))
	}
}
