package rounds

import (
	"context"
	"testing"
)

// TestFirstRoundAddsNoContextValue: a call's first round (no retry of a
// plugin's own round) runs with the handler's context itself, one
// allocation fewer per call; a retry is carried.
func TestFirstRoundAddsNoContextValue(t *testing.T) {
	ctx := context.Background()
	if got := withRetry(ctx, nil); got != ctx {
		t.Error("withRetry(ctx, nil) is a new context, want ctx")
	}
	r := &pluginRetry{state: "s"}
	if got, _ := withRetry(ctx, r).Value(retryKey{}).(*pluginRetry); got != r {
		t.Errorf("withRetry(ctx, r) carries %v, want r", got)
	}
}
