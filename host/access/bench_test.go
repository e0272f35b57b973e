package access_test

import (
	"fmt"
	"testing"

	"github.com/opentool-host/opentool-host/host/access"
)

// BenchmarkFilterListing is the predicate's share of filtering one
// listing of 1000 functions over 50 plugins for a key with four patterns
// (what /opentool/load, /otc/tools, export and MCP tools/list add per
// request for a restricted key).
func BenchmarkFilterListing(b *testing.B) {
	g, err := access.New(access.Config{File: writeFile(b, `{"keys":[{"name":"k","key":"k","allow":["add","fs_*","plugin:calc?","plugin:mock"]}]}`)})
	if err != nil {
		b.Fatal(err)
	}
	gr := grantOf(b, g, "k")
	type fn struct{ plugin, name string }
	fns := make([]fn, 1000)
	for i := range fns {
		fns[i] = fn{fmt.Sprintf("plugin%d", i%50), fmt.Sprintf("function_%d", i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, f := range fns {
			if gr.Allows(f.plugin, f.name) {
				n++
			}
		}
	}
}
