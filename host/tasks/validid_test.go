package tasks

import "testing"

// TestValidIDTakesWhatNewIDMakes: every id newID makes is valid, and what
// differs from that form (length, case, another digit) is not.
func TestValidIDTakesWhatNewIDMakes(t *testing.T) {
	for range 100 {
		id, err := newID()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidID(id) {
			t.Fatalf("ValidID(%q) = false for an id newID made", id)
		}
	}
	for _, id := range []string{"", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef0",
		"0123456789ABCDEF0123456789abcdef", "0123456789abcdeg0123456789abcdef", "../../0123456789abcdef0123456789ab"} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}
