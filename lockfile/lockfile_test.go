package lockfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/opentool"
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
