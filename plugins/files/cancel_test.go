package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cancellingReader is an endless reader of 'x' bytes that cancels its
// context on its first Read and counts its Reads.
type cancellingReader struct {
	cancel context.CancelFunc
	reads  int
}

// Read fills p with 'x' and cancels the context.
func (r *cancellingReader) Read(p []byte) (int, error) {
	r.reads++
	r.cancel()
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestReadAtMostStopsWhenCancelled cancels the context during a long read:
// the read stops after the chunk in progress with the context's error.
func TestReadAtMostStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &cancellingReader{cancel: cancel}
	data, err := readAtMost(ctx, r, 1<<30, 0)
	if !errors.Is(err, context.Canceled) || data != nil {
		t.Errorf("readAtMost = %d bytes, %v; want no data and context.Canceled", len(data), err)
	}
	if r.reads != 1 {
		t.Errorf("reads after cancelling = %d, want 1", r.reads)
	}
}

func TestReadAtMost(t *testing.T) {
	src := strings.Repeat("abc", readChunk) // 3 chunks
	for _, n := range []int64{0, 1, readChunk, readChunk + 1, int64(len(src)), int64(len(src)) + 1} {
		data, err := readAtMost(context.Background(), strings.NewReader(src), n, int64(len(src)))
		if err != nil {
			t.Fatalf("readAtMost(n=%d): %v", n, err)
		}
		if want := src[:min(n, int64(len(src)))]; string(data) != want {
			t.Errorf("readAtMost(n=%d) = %d bytes, want %d", n, len(data), len(want))
		}
	}
	if _, err := readAtMost(context.Background(), io.MultiReader(strings.NewReader("a"), errReader{}), 10, 0); !errors.Is(err, errBoom) {
		t.Errorf("readAtMost of a failing reader: err = %v, want errBoom", err)
	}
}

var errBoom = errors.New("boom")

// errReader fails every Read with errBoom.
type errReader struct{}

// Read returns errBoom.
func (errReader) Read([]byte) (int, error) { return 0, errBoom }

// TestCallsCancelled checks that each tool returns the context's error for
// a cancelled context, also on a large file and a large folder.
func TestCallsCancelled(t *testing.T) {
	tk, root := setup(t)
	big := strings.Repeat("x", 4*maxReadBytes)
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(root, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * dirBatch {
		if err := os.WriteFile(filepath.Join(many, strings.Repeat("f", 1+i%50)+string(rune('a'+i/50))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct{ name, args string }{
		{"read_text", `{"path":"big.txt","max_bytes":1048576}`},
		{"read_text", `{"path":"a.txt"}`},
		{"list_dir", `{"path":"many"}`},
		{"list_dir", `{}`},
		{"search_text", `{"pattern":"x","path":"big.txt"}`},
	} {
		if _, err := tk.CallJSON(ctx, c.name, []byte(c.args)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s(%s) with a cancelled context: err = %v, want context.Canceled", c.name, c.args, err)
		}
	}
	// With a live context the same calls work.
	var out listDirOut
	if err := call(tk, "list_dir", `{"path":"many"}`, &out); err != nil || len(out.Entries) != 3*dirBatch {
		t.Errorf("list_dir(many) = %d entries, %v; want %d", len(out.Entries), err, 3*dirBatch)
	}
}
