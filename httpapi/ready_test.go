package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/opentool-host/opentool-host/frontdoor"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/internal/testutil"
)

// TestReadinessOnGuardedRoute: the API's own GET /health?ready=1 (behind
// the keys, without the front door's readiness step) answers the same,
// behind the key.
func TestReadinessOnGuardedRoute(t *testing.T) {
	b := &testutil.StatesBackend{}
	b.Set(host.StateStarting)
	api := httpapi.New(b, httpapi.Config{Logger: testutil.Logger(t)})
	base := testutil.Serve(t, frontdoor.KeyedHandler([]string{"k"}, api.Routes()...))
	if code, _, _ := rawRequest(t, http.MethodGet, base+"/health?ready=1", ""); code != http.StatusUnauthorized {
		t.Errorf("without Front and without a key: %d, want 401", code)
	}
	code, _, body := rawRequest(t, http.MethodGet, base+"/health?ready=1", "", "Authorization: Bearer k")
	wantResponse(t, "readiness with the key", code, body, 503, `{"status":"starting"}`)
}
