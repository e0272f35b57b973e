package opentool

import "testing"

// TestExecution: a function's "execution" (MCP ToolExecution) is kept by
// Parse and Clone when its taskSupport is one of the three values, and
// anything else is a fault at its path.
func TestExecution(t *testing.T) {
	withExecution := func(ex string) string {
		return doc(`{"name":"f","description":"d","parameters":[],"execution":`+ex+`}`, ``)
	}
	for _, ts := range []string{TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired} {
		d, err := Parse([]byte(withExecution(`{"taskSupport":"` + ts + `"}`)))
		if err != nil {
			t.Fatalf("taskSupport %q: %v", ts, err)
		}
		f := &d.Functions[0]
		if f.TaskSupport() != ts || f.Clone().TaskSupport() != ts {
			t.Errorf("taskSupport %q: parsed %q, cloned %q", ts, f.TaskSupport(), f.Clone().TaskSupport())
		}
	}
	if d, err := Parse([]byte(withExecution(`{}`))); err != nil || d.Functions[0].Execution == nil || d.Functions[0].TaskSupport() != "" {
		t.Errorf("execution {}: %v, %+v", err, d)
	}
	for ex, want := range map[string]string{
		`{"taskSupport":"sometimes"}`: `functions[0].execution.taskSupport: must be "forbidden", "optional" or "required", not "sometimes"`,
		`{"taskSupport":true}`:        `functions[0].execution.taskSupport: must be a string`,
		`"required"`:                  `functions[0].execution: must be an object`,
	} {
		got := faultsOf(t, ValidateJSON([]byte(withExecution(ex))))
		if !equalFaults(got, faults(want)) {
			t.Errorf("execution %s:%s\nwant: %s", ex, faultLines(got), want)
		}
	}
}
