package oauth

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

// maxDocBytes caps a metadata, JWKS or introspection response (1 MiB).
const maxDocBytes = 1 << 20

// jsonNumber is f as JSON writes it.
func jsonNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// CheckURL checks that raw is an absolute URL that is https, or http on
// a loopback host (localhost, 127.0.0.0/8, ::1: tests and a local
// issuer), without a fragment. what names it in the error.
func CheckURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("%s %q: want an absolute https:// URL without a fragment", what, raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s %q: want https:// (http:// only for a loopback host)", what, raw)
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readJSON decodes resp's body (at most maxDocBytes) into v. Errors: a
// status other than 200, a body too large, not JSON.
func readJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		return fmt.Errorf("%s answered %s", resp.Request.URL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", resp.Request.URL, err)
	}
	if len(b) > maxDocBytes {
		return fmt.Errorf("%s: the answer is larger than %d bytes", resp.Request.URL, maxDocBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not JSON: %w", resp.Request.URL, err)
	}
	return nil
}
