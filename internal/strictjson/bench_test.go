package strictjson

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// benchInputs are the objects the benchmarks decode: 16 B and 64 KiB
// objects of one string member (the shape of jsonrpc's benchmark), and a
// 64 KiB object of many members, numbers, nested objects and arrays,
// and escaped and non-ASCII strings.
func benchInputs() []struct {
	name string
	data []byte
} {
	str := func(size int) []byte {
		return []byte(`{"data":"` + strings.Repeat("a", size-11) + `"}`)
	}
	var mixed bytes.Buffer
	mixed.WriteString(`{"items":[`)
	for i := 0; mixed.Len() < 64<<10-120; i++ {
		if i > 0 {
			mixed.WriteByte(',')
		}
		fmt.Fprintf(&mixed, `{"id":%d,"name":"item %d","price":%d.25,"tags":["a","b\n","é"],"ok":true,"meta":null}`, i, i, i)
	}
	mixed.WriteString(`]}`)
	return []struct {
		name string
		data []byte
	}{
		{"16B", str(16)},
		{"64KiB", str(64 << 10)},
		{"mixed64KiB", mixed.Bytes()},
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJSONSchemaUnmarshal is what argcheck used before: the
// decoder of github.com/santhosh-tekuri/jsonschema/v6.
func BenchmarkJSONSchemaUnmarshal(b *testing.B) {
	for _, in := range benchInputs() {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(in.data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
