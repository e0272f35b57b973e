package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// TestCollectItems: items joined into {"items":[...]} up to max bytes,
// the whole object counted; one more byte ends the stream with
// KindResultRejected; each sees every item.
func TestCollectItems(t *testing.T) {
	items := [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}
	stream := func(_ context.Context, _ *core.Exchange, _ string, _ []byte, on func([]byte) error) error {
		for _, it := range items {
			if err := on(it); err != nil {
				return err
			}
		}
		return nil
	}
	want := `{"items":[{"n":1},{"n":2}]}`
	seen := 0
	got, err := host.CollectItems(context.Background(), &core.Exchange{Item: func(n int, _ []byte) { seen = n }}, stream, "f", nil, int64(len(want)))
	if err != nil || string(got) != want || seen != 2 {
		t.Fatalf("CollectItems = %s, %v (seen %d)", got, err, seen)
	}
	_, err = host.CollectItems(context.Background(), nil, stream, "f", nil, int64(len(want)-1))
	if !errors.Is(err, core.KindResultRejected) {
		t.Fatalf("one byte over: %v, want result_rejected", err)
	}
	if got, err := host.CollectItems(context.Background(), nil, func(context.Context, *core.Exchange, string, []byte, func([]byte) error) error { return nil }, "f", nil, 100); err != nil || string(got) != `{"items":[]}` {
		t.Fatalf("no items: %s %v", got, err)
	}
}
