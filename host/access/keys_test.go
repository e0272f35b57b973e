package access_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/opentool-host/opentool-host/host/access"
)

// TestTrimKeys: keys are trimmed, blank entries dropped, and keys given
// all blank are refused rather than turning authentication off.
func TestTrimKeys(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{nil, nil},
		{[]string{" a ", "", "b", " "}, []string{"a", "b"}},
	} {
		if got, err := access.TrimKeys(tc.in); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("TrimKeys(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range [][]string{{""}, {" ", "\t"}} {
		if _, err := access.TrimKeys(in); !errors.Is(err, access.ErrBlankKeys) {
			t.Errorf("TrimKeys(%q): %v; want ErrBlankKeys", in, err)
		}
	}
}
