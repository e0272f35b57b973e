package lockfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

func TestWriteReadRoundTrip(t *testing.T) {
	f := New()
	f.Files["opentool-plugin-x"] = strings.Repeat("a", 64)
	fn := &opentool.Function{Name: "add", Description: "Adds."}
	f.Functions["x"] = map[string]string{"add": Digest(fn)}
	path := filepath.Join(t.TempDir(), Name)
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	g, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Files["opentool-plugin-x"] != f.Files["opentool-plugin-x"] || g.Functions["x"]["add"] != f.Functions["x"]["add"] {
		t.Errorf("read back %+v", g)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
}

func TestParseFaults(t *testing.T) {
	sum := strings.Repeat("0", 64)
	for _, c := range []struct{ in, want string }{
		{`{"lockfile_version":2,"files":{},"functions":{}}`, "$.lockfile_version: 2, this host reads 1"},
		{`{"lockfile_version":1,"files":{"a":"xyz"},"functions":{}}`, `$.files["a"]: not a hex sha256`},
		{`{"lockfile_version":1,"files":{},"functions":{"p":{"f":"` + sum + `"}}}`, `$.functions["p"]["f"]: not "sha256:" and 64 hex digits`},
		{`{"lockfile_version":1,"files":{},"functions":{},"extra":1}`, "extra"},
		{`{"lockfile_version":1,"lockfile_version":1}`, "duplicate"},
	} {
		if _, err := Parse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestDigestAndChanged(t *testing.T) {
	a := &opentool.Function{Name: "f", Description: "One.", Parameters: []opentool.Parameter{{Name: "x", Schema: &opentool.Schema{Type: opentool.TypeString}}}}
	b := *a
	b.Description = "Two."
	b.Parameters = []opentool.Parameter{{Name: "x", Schema: &opentool.Schema{Type: opentool.TypeInteger}}}
	if Digest(a) == Digest(&b) || Digest(a) != Digest(a) || !strings.HasPrefix(Digest(a), "sha256:") {
		t.Errorf("digests %s %s", Digest(a), Digest(&b))
	}
	if got := strings.Join(Changed(a, &b), ","); got != "description,parameters" {
		t.Errorf("Changed = %s", got)
	}
	if got := Changed(a, a); got != nil {
		t.Errorf("Changed(a, a) = %v", got)
	}
}

// TestSources: sources round-trip, are strict-decoded, and a source whose
// file is re-pinned with other bytes or unpinned is dropped by Write.
func TestSources(t *testing.T) {
	sumA, sumB := strings.Repeat("a", 64), strings.Repeat("b", 64)
	manifest := "sha256:" + strings.Repeat("c", 64)
	f := New()
	f.Files["opentool-plugin-x"] = sumA
	f.Files["x.policy.json"] = sumB
	f.SetSource("opentool-plugin-x", Source{Ref: "127.0.0.1:5000/p/x:1", Manifest: manifest, SHA256: sumA})
	f.SetSource("x.policy.json", Source{Ref: "127.0.0.1:5000/p/x:1", Manifest: manifest, SHA256: sumB})
	path := filepath.Join(t.TempDir(), Name)
	if err := f.Write(path); err != nil {
		t.Fatal(err)
	}
	g, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Sources["opentool-plugin-x"] != f.Sources["opentool-plugin-x"] || len(g.Sources) != 2 {
		t.Fatalf("read back %+v", g.Sources)
	}
	g.Files["opentool-plugin-x"] = sumB // rebuilt locally and re-pinned
	delete(g.Files, "x.policy.json")    // unpinned
	if err := g.Write(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "sources") {
		t.Errorf("stale sources kept:\n%s", data)
	}

	ok := `{"lockfile_version":1,"files":{},"functions":{},"sources":{"f":{"ref":"r","manifest":"` + manifest + `","sha256":"` + sumA + `"}}}`
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("Parse(%s): %v", ok, err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"lockfile_version":1,"files":{},"functions":{},"sources":{"f":{"ref":"","manifest":"` + manifest + `","sha256":"` + sumA + `"}}}`, `$.sources["f"].ref: must not be empty`},
		{`{"lockfile_version":1,"files":{},"functions":{},"sources":{"f":{"ref":"r","manifest":"` + sumA + `","sha256":"` + sumA + `"}}}`, `$.sources["f"].manifest`},
		{`{"lockfile_version":1,"files":{},"functions":{},"sources":{"f":{"ref":"r","manifest":"` + manifest + `","sha256":"x"}}}`, `$.sources["f"].sha256: not a hex sha256`},
		{`{"lockfile_version":1,"files":{},"functions":{},"sources":{"f":{"ref":"r","manifest":"` + manifest + `","sha256":"` + sumA + `","extra":1}}}`, `extra`},
		{`{"lockfile_version":1,"files":{},"functions":{},"sources":[]}`, `sources`},
	} {
		if _, err := Parse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.want)
		}
	}
}
