package jsonrpc

import (
	"strings"
	"testing"
)

// BenchmarkDecodeRequest decodes a call with 16 B and 64 KiB params.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, size := range []int{16, 64 << 10} {
		params := `{"data":"` + strings.Repeat("a", size-11) + `"}`
		body := []byte(`{"jsonrpc":"2.0","method":"echo","params":` + params + `,"id":1}`)
		b.Run(map[int]string{16: "16B", 64 << 10: "64KiB"}[size], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
