package testkit

import (
	"encoding/json"
	"testing"
)

// CanonicalJSON is v as canonical JSON: objects' members sorted, no
// insignificant space; what two MCP definitions or results are compared
// as ("byte for byte after canonicalisation"). Fails t when v does not
// encode.
func CanonicalJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a any
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(a) // decoded JSON: encodes
	return string(b)
}

// HostResultMembers are the members of an MCP result that the host, as
// the server its clients talk to, writes itself when the server behind
// it has not: the cache hints of the lists and resources/read (ttlMs,
// cacheScope: its MCP SDK writes them at every revision) and
// 2026-07-28's resultType.
var HostResultMembers = []string{"ttlMs", "cacheScope", "resultType"}

// SameMCPResult reports whether got (a result through the host, decoded
// JSON) is want (the server's own), member for member as CanonicalJSON,
// but for the HostResultMembers want lacks, which it removes from got.
func SameMCPResult(t testing.TB, got, want map[string]any) bool {
	t.Helper()
	for _, k := range HostResultMembers {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	return CanonicalJSON(t, got) == CanonicalJSON(t, want)
}
