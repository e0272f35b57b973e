package harness

import "net/http"

// authorizing is an http.RoundTripper that sends every request with an
// Authorization header (LoadRequest.Authorization).
type authorizing struct {
	base  http.RoundTripper
	value []string
}

// RoundTrip implements http.RoundTripper: a clone of r (RoundTrip must
// not change r) with the header set.
func (a *authorizing) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header["Authorization"] = a.value
	return a.base.RoundTrip(r)
}

// WithAuthorization returns a copy of c that sends every request with
// the header "Authorization: value" (c itself when value is empty); its
// CloseIdleConnections closes c's.
func WithAuthorization(c *http.Client, value string) *http.Client {
	if value == "" {
		return c
	}
	out := *c
	out.Transport = &authorizing{base: c.Transport, value: []string{value}}
	return &out
}

// CloseIdleConnections closes the base transport's idle connections (so
// that http.Client.CloseIdleConnections reaches them).
func (a *authorizing) CloseIdleConnections() {
	if c, ok := a.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
