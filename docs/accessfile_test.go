package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestKeysFileExamples: every ```json block of docs/security.md that is a
// keys file (it has a top-level "keys" member) is a valid one
// (access.ParseFile), its "tokens" rules included, so that the page
// cannot show a rule the host refuses.
func TestKeysFileExamples(t *testing.T) {
	root := testkit.RepoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, rules := 0, 0
	for _, b := range blocks(string(md)) {
		if b.lang != "json" || !strings.HasPrefix(strings.TrimSpace(b.text), `{`) || !strings.Contains(b.text, `"keys":`) {
			continue
		}
		files++
		f, err := access.ParseFile([]byte(b.text))
		if err != nil {
			t.Errorf("security.md line %d: %v", b.line, err)
			continue
		}
		rules += len(f.Tokens)
	}
	if files < 2 || rules == 0 {
		t.Fatalf("security.md shows %d keys files and %d token rules; want the keys example and the OAuth rules", files, rules)
	}
}
