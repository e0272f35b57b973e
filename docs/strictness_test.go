package docs_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestArgumentStrictnessRules: the "Argument strictness" section of
// docs/writing-plugins.md names every rule of the table the three SDKs
// are tested against (testdata/sdk-strictness.json), in bold, so that a
// rule added to the table is added to the page.
func TestArgumentStrictnessRules(t *testing.T) {
	root := testkit.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "testdata", "sdk-strictness.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Rules map[string]string `json:"rules"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "writing-plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Argument strictness\n")
	if !ok {
		t.Fatal(`docs/writing-plugins.md has no "## Argument strictness" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if len(table.Rules) == 0 {
		t.Fatal("testdata/sdk-strictness.json has no rules")
	}
	for id := range table.Rules {
		if !strings.Contains(section, "| **"+id+"**: ") {
			t.Errorf("the Argument strictness section has no row for rule %q (%s)", id, table.Rules[id])
		}
	}
}
