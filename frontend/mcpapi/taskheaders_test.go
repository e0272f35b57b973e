package mcpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// TestTaskNameHeaderMatchesTaskID: a 2026-07-28 tasks/get, tasks/update or
// tasks/cancel whose Mcp-Name header names another task than its
// params.taskId is refused with HTTP 400 and -32020 before it reaches a
// task (SEP-2663: proxies route by the header); the same request with the
// matching header goes on (here to the task's own answer, -32602 for an
// unknown one), as one without the header or of an older revision.
func TestTaskNameHeaderMatchesTaskID(t *testing.T) {
	r := startTaskRig(t, 0)
	u := r.url + mcpapi.Path
	id := "0123456789abcdef0123456789abcdef"
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		st, out, raw := mcpRaw(t, u, aliceKey, taskReq(1, method, id, newMeta(true)), append(newHeaders(method), "Mcp-Name: other-task")...)
		if st != http.StatusBadRequest || out.Error == nil || out.Error.Code != -32020 || !strings.Contains(raw, `"id":1`) {
			t.Errorf("%s with a mismatched Mcp-Name: %d %s, want 400 and -32020 answering id 1", method, st, raw)
		}
		for _, h := range [][]string{append(newHeaders(method), "Mcp-Name: "+id), newHeaders(method)} {
			if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(2, method, id, newMeta(true)), h...); out.Error == nil || out.Error.Code == -32020 {
				t.Errorf("%s with headers %q: %s, want the task's own answer", method, h, raw)
			}
		}
	}
	// An older revision's request has no standard headers to check.
	if _, out, raw := mcpRaw(t, u, aliceKey, taskReq(3, "tasks/get", id, ""), "Mcp-Name: other-task", "Mcp-Protocol-Version: 2025-11-25"); out.Error != nil && out.Error.Code == -32020 {
		t.Errorf("a 2025-11-25 tasks/get was checked as 2026-07-28: %s", raw)
	}
}
