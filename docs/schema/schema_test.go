package schema

import (
	"strings"
	"testing"
)

// TestCheckReportsEveryFault: a declaration with several faults gets all
// of them, each with its JSON path.
func TestCheckReportsEveryFault(t *testing.T) {
	faults, err := Check("tools", []byte(`{"functions":[{"name":"f","description":"d","command":["x"],"bogus":1,"output":"xml"}],"extra":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range faults {
		got = append(got, f.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"$.extra: unknown member", "$.functions[0].bogus: unknown member", "$.functions[0].output: value must be one of"} {
		if !strings.Contains(all, want) {
			t.Errorf("faults lack %s:\n%s", want, all)
		}
	}
	if faults, err := Check("policy", []byte(`{"timeout_ms": 1000}`)); err != nil || faults != nil {
		t.Errorf("a valid policy: %v %v", faults, err)
	}
	if _, err := Check("tools", []byte(`{`)); err == nil {
		t.Error("not JSON accepted")
	}
	if jsonPath("/functions/0/a~1b") != "$.functions[0].a/b" {
		t.Error(jsonPath("/functions/0/a~1b"))
	}
}
