package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/access/oauth"
	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// Config configures a Guard.
type Config struct {
	// Keys are plain keys (--api-key, OPENTOOL_API_KEYS): each may see
	// and call everything, without a rate limit. The Nth non-empty one is
	// named "api-key-N" in logs. Empty keys are ignored.
	Keys []string
	// File is the path of a keys file (--api-keys-file, see File); "" for
	// none. Its keys are added to Keys.
	File string
	// Logger logs reloads and refused requests, with key names, never
	// keys. Default: no logging.
	Logger hclog.Logger
	// Tag, when set, is given the context of each authenticated request
	// and the key's name, and returns the context the request goes on
	// with (the command puts the name into core.Caller for call records).
	Tag func(ctx context.Context, keyName string) context.Context
	// OAuth, when set, also accepts OAuth access tokens it validates
	// (--oauth-issuer): a bearer value that is no key and is a JWS (or
	// any, with introspection) is a token, granted by the keys file's
	// "tokens" rules (TokenRule). Authentication is then on.
	OAuth *oauth.Verifier
}

// Guard holds the accepted keys and their grants. Authentication is on
// when it has plain keys or a keys file (even one that lists no key).
// It is safe for concurrent use; Reload swaps the file's keys atomically.
type Guard struct {
	cfg   Config
	plain []entry // from Config.Keys, never reloaded

	mu      sync.Mutex // one reload at a time; guards fileSum and changed
	cur     atomic.Pointer[keySet]
	fileSum [sha256.Size]byte // of the file bytes loaded last
	changed chan struct{}
}

// entry is one accepted key: the sha256 of the key, and its grant.
type entry struct {
	sum   [sha256.Size]byte
	grant *Grant
}

// keySet is the keys and token rules in force; immutable but for the
// grants of principals, made at their first request.
type keySet struct {
	entries []entry
	rules   []TokenRule
	// principals are the grants of tokens (tokenGrant), shared with the
	// next set while the rules stay the same.
	principals *principals
}

// New returns the Guard of cfg, reading cfg.File when set. Errors: the
// file cannot be read, or a *Fault (with the file's JSON path) when it
// is not a valid keys file or gives a key also given in Keys.
func New(cfg Config) (*Guard, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	g := &Guard{cfg: cfg, changed: make(chan struct{})}
	n := 0
	for _, k := range cfg.Keys {
		if k == "" {
			continue
		}
		n++
		g.plain = append(g.plain, entry{sum: sha256.Sum256([]byte(k)), grant: newGrant("api-key-"+strconv.Itoa(n), []string{"*"}, nil, false, g.Count)})
	}
	set := &keySet{entries: g.plain, principals: &principals{}}
	if cfg.File != "" {
		data, err := os.ReadFile(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("api keys file: %w", err)
		}
		if set, err = g.build(data, nil); err != nil {
			return nil, fmt.Errorf("api keys file %w", strictjson.InFile(cfg.File, err))
		}
		g.fileSum = sha256.Sum256(data)
	}
	if cfg.OAuth != nil && len(set.rules) == 0 {
		cfg.Logger.Warn("access tokens are accepted (--oauth-issuer) but no \"tokens\" rule of the keys file grants them anything: every token gets 403 until one does")
	}
	g.cur.Store(set)
	return g, nil
}

// Enabled reports whether requests need a key.
func (g *Guard) Enabled() bool {
	return g != nil && (len(g.plain) > 0 || g.cfg.File != "" || g.cfg.OAuth != nil)
}

// Names returns the names of the keys in force, plain keys first.
func (g *Guard) Names() []string {
	set := g.cur.Load()
	out := make([]string, len(set.entries))
	for i, e := range set.entries {
		out[i] = e.grant.name
	}
	return out
}

// Count returns how many keys are in force (plain keys and the keys
// file's); 0 for a nil Guard. With OAuth it is at least 2: the
// principals of tokens are callers of their own, who share what is
// shared per key (MCP session places) as keys do.
func (g *Guard) Count() int {
	if g == nil {
		return 0
	}
	n := len(g.cur.Load().entries)
	if g.cfg.OAuth != nil {
		n = max(n, 2)
	}
	return n
}

// build returns the plain keys and the keys of file data. Limiters of
// old's keys carry over to keys of the same name and rate.
func (g *Guard) build(data []byte, old *keySet) (*keySet, error) {
	f, err := ParseFile(data)
	if err != nil {
		return nil, err
	}
	limiters := map[string]*Grant{}
	olds := map[[sha256.Size]byte]*Grant{}
	if old != nil {
		for _, e := range old.entries {
			limiters[e.grant.name] = e.grant
			olds[e.sum] = e.grant
		}
	}
	set := &keySet{entries: append([]entry(nil), g.plain...), rules: f.Tokens, principals: &principals{}}
	if old != nil && reflect.DeepEqual(old.rules, f.Tokens) {
		set.principals = old.principals
	}
	for i := range f.Keys {
		k := &f.Keys[i]
		e := entry{sum: k.sum(), grant: newGrant(k.Name, *k.Allow, k.Rate, true, g.Count)}
		for _, p := range g.plain {
			if p.sum == e.sum {
				return nil, &Fault{Path: fmt.Sprintf("$.keys[%d]", i), Message: "the same key as --api-key / OPENTOOL_API_KEYS (" + p.grant.name + ")"}
			}
		}
		if prev := limiters[k.Name]; prev != nil && sameRate(prev.rate, k.Rate) {
			if kept := olds[e.sum]; kept == prev && slices.Equal(prev.allow, *k.Allow) {
				e.grant = prev // the same key, name, allow and rate: still in force
			} else {
				e.grant.limiter = prev.limiter
			}
		}
		set.entries = append(set.entries, e)
	}
	return set, nil
}

// revokeDropped revokes the grants of old that set no longer holds: their
// requests in flight and open streams (/events, MCP streams, calls) end.
func revokeDropped(old, set *keySet) {
	kept := map[*Grant]bool{}
	for _, e := range set.entries {
		kept[e.grant] = true
	}
	for _, e := range old.entries {
		if !kept[e.grant] && e.grant.revoke != nil {
			e.grant.revoke()
		}
	}
	if old.principals != set.principals {
		old.principals.revokeAll()
	}
}

// sameRate reports whether a and b limit alike.
func sameRate(a, b *Rate) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.PerSecond == b.PerSecond && a.burst() == b.burst()
}

// Reload reads the keys file again and puts its keys in force. A file
// that cannot be read or is not valid is logged with its JSON path and
// changes nothing: the keys in force stay. Without a file it does
// nothing.
func (g *Guard) Reload() error {
	if g.cfg.File == "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.signal()
	data, err := os.ReadFile(g.cfg.File)
	if err == nil {
		var set *keySet
		old := g.cur.Load()
		if set, err = g.build(data, old); err == nil {
			g.cur.Store(set)
			revokeDropped(old, set)
			g.fileSum = sha256.Sum256(data)
			g.cfg.Logger.Info("api keys file reloaded", "file", g.cfg.File, "keys", strings.Join(g.Names(), ","))
			return nil
		}
	}
	g.cfg.Logger.Error("api keys file not reloaded; the keys in force stay", "file", g.cfg.File, "error", err)
	return fmt.Errorf("api keys file %w", strictjson.InFile(g.cfg.File, err))
}

// signal closes the channel Changed returned. Callers hold g.mu.
func (g *Guard) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Changed returns a channel closed when the next reload attempt has
// finished (whether it put new keys in force or not).
func (g *Guard) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// Watch starts reloading the keys file whenever its bytes change, until
// ctx ends: it watches the file's folder (so that editors that replace
// the file, and symlink swaps, are seen) and reloads, 100 ms after the
// last event, when the file's sha256 differs from the one loaded. The
// watch is in place when Watch returns. Without a file it does nothing;
// when the folder cannot be watched it logs and returns the error
// (SIGHUP still reloads).
func (g *Guard) Watch(ctx context.Context) error {
	if g.cfg.File == "" {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(g.cfg.File))
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		g.cfg.Logger.Warn("api keys file not watched; send SIGHUP to reload it", "file", g.cfg.File, "error", err)
		return err
	}
	go g.watch(ctx, w)
	return nil
}

// watch is Watch's loop; it closes w when ctx ends.
func (g *Guard) watch(ctx context.Context, w *fsnotify.Watcher) {
	defer w.Close()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			debounce.Reset(100 * time.Millisecond)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			g.cfg.Logger.Warn("watching the api keys file", "error", err)
		case <-debounce.C:
			if g.fileChanged() {
				_ = g.Reload()
			}
		}
	}
}

// fileChanged reports whether the file's bytes differ from those loaded
// (a file that cannot be read counts as changed, so that Reload logs
// why).
func (g *Guard) fileChanged() bool {
	data, err := os.ReadFile(g.cfg.File)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // removed: keep the keys until it is back
	}
	sum := sha256.Sum256(data)
	g.mu.Lock()
	defer g.mu.Unlock()
	return !bytes.Equal(sum[:], g.fileSum[:])
}

// grant returns the grant of key token, comparing its sha256 with every
// accepted key's in constant time (no early exit: the time says neither
// which key matched nor how long the keys are), or nil.
func (s *keySet) grant(token string) *Grant {
	sum := sha256.Sum256([]byte(token))
	found := 0
	for i := range s.entries {
		eq := subtle.ConstantTimeCompare(sum[:], s.entries[i].sum[:])
		found = subtle.ConstantTimeSelect(eq, i+1, found)
	}
	if found == 0 {
		return nil
	}
	return s.entries[found-1].grant
}

// The bodies of a 401 response. They say only that a key is missing or
// wrong, never which keys exist.
const (
	unauthorizedMissing = `{"error":{"code":401,"message":"unauthorized: an API key is required (send Authorization: Bearer <key>)"}}`
	unauthorizedInvalid = `{"error":{"code":401,"message":"unauthorized: the API key is not valid"}}`
)

var (
	contentJSON    = []string{"application/json"}
	wwwAuthBearer  = []string{`Bearer realm="opentool"`}
	wwwAuthInvalid = []string{`Bearer realm="opentool", error="invalid_token"`}
)

// Middleware returns next behind the keys: a request must carry
// "Authorization: Bearer KEY" (scheme case-insensitive, RFC 7235) with an
// accepted KEY, or, with Config.OAuth, an access token the token rules
// grant something (Guard.token), or it gets HTTP 401 with
// WWW-Authenticate: Bearer and {"error":{"code":401,"message":
// "unauthorized: ..."}}, which names no key (with OAuth: the challenge of
// RFC 9728 §5.1, see challenge; a valid token granted nothing gets 403
// insufficient_scope, RFC 6750 §3.1). An accepted request goes on with
// the key's Grant on its context (GrantFrom) and through Config.Tag.
// When authentication is off, next is returned as is.
func (g *Guard) Middleware(next http.Handler) http.Handler {
	if !g.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, sent := BearerToken(r.Header.Get("Authorization"))
		set := g.cur.Load()
		var gr *Grant
		if sent {
			gr = set.grant(token)
		}
		if gr == nil && sent && g.cfg.OAuth != nil {
			var err error
			if gr, err = g.token(r.Context(), set, token); err != nil {
				g.refuseToken(w, r, set, err)
				return
			}
		}
		if gr == nil {
			g.unauthorized(w, r, sent)
			return
		}
		ctx, release := gr.bind(WithGrant(r.Context(), gr))
		defer release()
		if g.cfg.Tag != nil {
			ctx = g.cfg.Tag(ctx, gr.name)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// unauthorized writes the 401 answer; sent says whether a key was sent.
func (g *Guard) unauthorized(w http.ResponseWriter, r *http.Request, sent bool) {
	h := w.Header()
	h["Content-Type"] = contentJSON
	body := unauthorizedMissing
	switch {
	case g.cfg.OAuth != nil:
		h["Www-Authenticate"] = []string{g.challenge(g.cur.Load(), nil)}
	case sent:
		h["Www-Authenticate"] = wwwAuthInvalid
		body = unauthorizedInvalid
	default:
		h["Www-Authenticate"] = wwwAuthBearer
	}
	if sent {
		g.cfg.Logger.Debug("request refused: the API key is not valid", "path", r.URL.Path, "remote", r.RemoteAddr)
	}
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(body))
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN"
// header value (scheme case-insensitive, RFC 7235, spaces around the
// token trimmed), and false when the header is missing, of another
// scheme or has an empty token.
func BearerToken(v string) (string, bool) {
	const prefix = "Bearer "
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(v[len(prefix):])
	return t, t != ""
}
