package frontdoor

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/opentool-host/opentool-host/host/access"
)

// Defaults of the stream caps (--max-streams, --max-streams-per-key).
const (
	DefaultMaxStreams       = 1024
	DefaultMaxStreamsPerKey = 64
)

// Streams caps the long-lived responses a host holds open: the requests
// of the routes that declare they stream (route.Route.Stream: GET
// /events, POST /opentool/streamCall, an MCP session's GET /mcp stream
// and an MCP subscriptions/listen POST). Each holds a connection, a file descriptor
// and a goroutine for as long as the client likes, so they are counted
// overall (Max) and per API key (MaxPerKey; keys off: one key). Over a
// cap the request is refused before any work: 429 over the key's cap, 503
// over the host's, in the route's format (route.Route.Refuse), with Retry-After: 1
// and Connection: close. Streams end by themselves (client gone, revocation,
// shutdown), and their slot is freed then.
type Streams struct {
	// Max is the most streams open at once; <= 0 means
	// DefaultMaxStreams.
	Max int
	// MaxPerKey is the most one key may hold open; <= 0 means
	// DefaultMaxStreamsPerKey.
	MaxPerKey int

	mu    sync.Mutex
	total int
	byKey map[string]int
}

// Wrap returns next with the requests isStream says stream counted and
// capped, a refusal written by refuse (status 429 or 503); it goes inside
// the authentication (the key is read from the request's grant). Every
// handler s wraps shares its caps.
func (s *Streams) Wrap(next http.Handler, isStream func(*http.Request) bool, refuse func(w http.ResponseWriter, r *http.Request, status int, msg string)) http.Handler {
	s.mu.Lock()
	if s.Max <= 0 {
		s.Max = DefaultMaxStreams
	}
	if s.MaxPerKey <= 0 {
		s.MaxPerKey = DefaultMaxStreamsPerKey
	}
	if s.byKey == nil {
		s.byKey = map[string]int{}
	}
	s.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		key := access.GrantFrom(r.Context()).Name()
		if status, msg := s.acquire(key); status != 0 {
			// Over capacity, the connection is not kept either: a client
			// that retries in a loop holds no descriptor in between.
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			refuse(w, r, status, msg)
			return
		}
		defer s.release(key)
		next.ServeHTTP(w, r)
	})
}

// acquire takes a slot for key, or returns the status and message of the
// refusal.
func (s *Streams) acquire(key string) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key] >= s.MaxPerKey {
		return http.StatusTooManyRequests, fmt.Sprintf("too many open streams for this API key: %d (--max-streams-per-key); close one first", s.MaxPerKey)
	}
	if s.total >= s.Max {
		return http.StatusServiceUnavailable, fmt.Sprintf("the host holds its most open streams, %d (--max-streams); try again later", s.Max)
	}
	s.byKey[key]++
	s.total++
	return 0, ""
}

// release frees key's slot.
func (s *Streams) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.byKey[key]--; s.byKey[key] == 0 {
		delete(s.byKey, key)
	}
}

// Open returns the number of streams open now.
func (s *Streams) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}
