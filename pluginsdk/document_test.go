package pluginsdk_test

import (
	"os/exec"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestDocumentFlag: a Go plugin run with --document prints its OpenTool
// document and exits 0, as the Python and Node SDKs do (issue 23); the
// document parses and validates.
func TestDocumentFlag(t *testing.T) {
	out, err := exec.Command(testkit.Build(t, "./plugins/calculator"), "--document").Output()
	if err != nil {
		t.Fatalf("--document: %v\n%s", err, out)
	}
	doc, err := opentool.Parse(out)
	if err != nil {
		t.Fatalf("the document does not parse: %v\n%s", err, out)
	}
	if doc.Info.Title != "Calculator" || len(doc.Functions) != 4 {
		t.Errorf("document %+v", doc.Info)
	}
}
