package nearest

import (
	"slices"
	"testing"
)

// TestName: a name equal but for case, a prefix, or within edit distance
// 2 is found; nothing far, short or equal is.
func TestName(t *testing.T) {
	names := []string{"dir", "d", "call-timeout", "add", "subtract", "list_notes"}
	for name, want := range map[string]string{
		"dri": "dir", "call-timout": "call-timeout", "call": "call-timeout", "Add": "add", "ADD": "add",
		"substract": "subtract", "list_note": "list_notes", "frob": "", "x": "", "add": "",
	} {
		if got := Name(name, slices.Values(names)); got != want {
			t.Errorf("Name(%q) = %q, want %q", name, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
