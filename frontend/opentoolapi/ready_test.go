package opentoolapi_test

import (
	"net/http"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestReadinessOnGuardedRoute: the API's own GET /health?ready=1 (behind
// the keys, without the front door's readiness step) answers the same,
// behind the key.
func TestReadinessOnGuardedRoute(t *testing.T) {
	b := &testkit.StatesBackend{}
	b.Set(core.StateStarting)
	api := opentoolapi.New(b, opentoolapi.Config{Logger: testkit.Logger(t)})
	base := testkit.Serve(t, frontdoor.KeyedHandler([]string{"k"}, api.Routes()...))
	if code, _, _ := rawRequest(t, http.MethodGet, base+"/health?ready=1", ""); code != http.StatusUnauthorized {
		t.Errorf("without Front and without a key: %d, want 401", code)
	}
	code, _, body := rawRequest(t, http.MethodGet, base+"/health?ready=1", "", "Authorization: Bearer k")
	wantResponse(t, "readiness with the key", code, body, 503, `{"status":"starting"}`)
}
