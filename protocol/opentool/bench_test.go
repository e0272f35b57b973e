package opentool

import (
	"encoding/json"
	"strings"
	"testing"
)

// deepDoc is a valid document whose parameter schema nests arrays depth
// levels deep: walking, encoding and inlining it must stay linear.
func deepDoc(depth int) []byte {
	s := strings.Repeat(`{"type":"array","items":`, depth) + `{"type":"string"}` + strings.Repeat(`}`, depth)
	return []byte(withSchema(s, ``))
}

func BenchmarkParseFixture(b *testing.B) {
	data := readFixture(b, "reference-mock-tool.json")
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseDeep(b *testing.B) {
	data := deepDoc(4900)
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalDeep(b *testing.B) {
	d, err := Parse(deepDoc(4900))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := json.Marshal(d); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDeepDocument(t *testing.T) {
	d, err := Parse(deepDoc(4900))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inline(); err != nil {
		t.Fatal(err)
	}
	js, err := ParametersJSONSchema(d, &d.Functions[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromJSONSchema(js); err != nil {
		t.Fatal(err)
	}
	// A fault at the bottom has the full path.
	bad := strings.Replace(string(deepDoc(3)), `{"type":"string"}`, `{"type":"strin"}`, 1)
	want := P + `.items.items.items.type: must be one of boolean, integer, number, string, array, object (got "strin")`
	if err := ValidateJSON([]byte(bad)); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
