package httpguard

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// RequestGuard refuses, before authentication and before any front end
// sees it, a request that a web page in the user's browser could have
// made on its own behalf:
//
//   - a Host that is not this host's: DNS rebinding gives a hostile page a
//     name of its own that resolves to 127.0.0.1, and then same-origin
//     access to every answer. Allowed: "localhost", loopback addresses,
//     the listen address (every address of this machine when listening on
//     0.0.0.0 or ::), and the names of AllowedHosts; any port. 403.
//   - an Origin header that is not the request's own origin
//     (http[s]://HOST as sent) nor one of AllowedOrigins: a cross-site
//     request. 403. Requests without Origin (curl, SDKs, same-origin GETs)
//     pass.
//   - a POST (or PUT, PATCH) whose Content-Type is not application/json
//     or application/json-rpc (parameters allowed), or absent: text/plain
//     and the form types are what a page may send cross-site without a
//     CORS preflight. 415.
//
// The readiness probe (GET or HEAD /health?ready=1), which kubelets and
// balancers send with a pod address as Host, does not reach the guard:
// the front door answers it before (frontdoor.Readiness).
type RequestGuard struct {
	// Listen is the listener's address; its IP is allowed as Host, and
	// when it is unspecified (0.0.0.0, ::) so is every interface address
	// of this machine.
	Listen net.Addr
	// AllowedHosts are more names (or addresses) allowed as Host, without
	// port, compared case-insensitively (--allowed-host): a reverse
	// proxy's or a Kubernetes Service's name.
	AllowedHosts []string
	// AllowedOrigins are more origins allowed in Origin, as
	// scheme://host[:port] (--allowed-origin).
	AllowedOrigins []string
	// Refuse writes the refusal: status 403 or 415 and msg, in the wire
	// format of the route r asked for (a JSON-RPC error on /opentool and
	// /mcp, an OTC response on /otc, {"error":{...}} elsewhere).
	Refuse func(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// Wrap returns next behind the guard. It reads the machine's interface
// addresses once, now. Errors: an AllowedOrigins entry that is not
// scheme://host[:port].
func (g *RequestGuard) Wrap(next http.Handler) (http.Handler, error) {
	hosts := map[string]bool{"localhost": true}
	for _, h := range g.AllowedHosts {
		hosts[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	local := map[string]bool{}
	if ta, ok := g.Listen.(*net.TCPAddr); ok {
		if ta.IP.IsUnspecified() {
			if addrs, err := net.InterfaceAddrs(); err == nil {
				for _, a := range addrs {
					if in, ok := a.(*net.IPNet); ok {
						local[in.IP.String()] = true
					}
				}
			}
		} else {
			local[ta.IP.String()] = true
		}
	}
	origins := map[string]bool{}
	for _, o := range g.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("--allowed-origin %q: want scheme://host[:port], e.g. https://app.example.com", o)
		}
		origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, hosts, local) {
			g.Refuse(w, r, http.StatusForbidden, fmt.Sprintf("forbidden: Host %q is not a name of this host; a reverse proxy's name must be allowed with --allowed-host", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, r, origins) {
			g.Refuse(w, r, http.StatusForbidden, fmt.Sprintf("forbidden: cross-origin request from %q; allow a web app's origin with --allowed-origin", o))
			return
		}
		if hasBody(r.Method) {
			if msg := jsonContentType(r.Header.Get("Content-Type")); msg != "" {
				g.Refuse(w, r, http.StatusUnsupportedMediaType, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	}), nil
}

// hostAllowed applies the Host rule of RequestGuard to host (as sent,
// with or without port).
func hostAllowed(host string, names, local map[string]bool) bool {
	h := host
	if hp, _, err := net.SplitHostPort(host); err == nil {
		h = hp
	}
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if h == "" {
		return false
	}
	if names[h] {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || local[ip.String()])
}

// originAllowed reports whether origin is r's own (same scheme-less host
// and port as the Host sent) or one of allowed.
func originAllowed(origin string, r *http.Request, allowed map[string]bool) bool {
	o := strings.ToLower(origin)
	if allowed[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (sandboxed frames, file:) and the like
	}
	return u.Host == strings.ToLower(r.Host)
}

// hasBody reports whether requests of method carry a body the front ends
// read (and so a Content-Type the guard checks).
func hasBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// jsonContentType returns why ct is refused ("" when it is
// application/json or application/json-rpc, with any parameters).
func jsonContentType(ct string) string {
	switch ct {
	case "":
		return "Content-Type must be application/json, got none"
	case "application/json", "application/json; charset=utf-8", "application/json-rpc":
		return "" // what clients send, without a parse
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || mt == "application/json-rpc") {
		return ""
	}
	return fmt.Sprintf("Content-Type must be application/json, got %q", ct)
}

// Header is h.Get(key) for a key in canonical form (textproto's:
// "Mcp-Session-Id", "Last-Event-Id"): the first value, "" for none, read
// from the map without canonicalizing key again (which Get does on every
// call, allocating for a key not in canonical form).
func Header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
