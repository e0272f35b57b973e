// Package access decides who may see and call which functions: API keys
// (--api-key, --api-keys-file), what each key may call, and its rate
// limit. It is the one place that decides; the others ask it:
//
//   - Guard.Middleware authenticates every HTTP request (Authorization:
//     Bearer KEY, compared in constant time; with Config.OAuth also an
//     OAuth access token, validated by package oauth and granted by the
//     keys file's "tokens" rules, TokenRule) and puts the key's or the
//     token principal's Grant into the request's context, or answers
//     HTTP 401 (403 insufficient_scope for a token granted nothing).
//   - Allowed(ctx, plugin, function) is the predicate. The host's call
//     path asks it where a function name is routed (host/call.go,
//     lookup), so a function the key may not call is answered exactly
//     like an unknown one on every front end; every listing
//     (/opentool/load, /opentool/export, /otc/tools, MCP tools/list)
//     filters with it.
//   - Limit(ctx, n) takes a request's calls from the key's rate limiter,
//     in one place for every front end (the front door's chain); each
//     front end answers a Refusal in its own format (CodeRateLimited,
//     RateLimitedMessage).
//
// A context without a Grant (authentication off, stdio MCP, the CLI) is
// allowed everything and never limited.
package access

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Grant is what one key may do. Grants are immutable (but for the value
// Memo makes once); a reload of the keys file makes new ones (keeping the
// rate limiters of keys whose name and rate did not change).
type Grant struct {
	name    string
	all     bool     // "*" in allow: everything
	funcs   []string // globs over function names
	plugins []string // globs over plugin names ("plugin:GLOB")
	rate    *Rate
	allow   []string      // the patterns as given, to compare across reloads
	limiter *rate.Limiter // nil: not limited
	// life ends (revoke) when a reload of the keys file no longer has
	// this grant (the key was removed, or its allow or rate changed);
	// context.Background for keys that are never reloaded.
	life   context.Context
	revoke context.CancelFunc
	// principal is the token's caller for a grant of an access token
	// (Guard.token), nil for a key's.
	principal *Principal
	// keys is the Count of the Guard that made the grant (nil: NewGrant's).
	keys func() int
	// memo is Memo's value, once made.
	memo atomic.Pointer[any]
}

// Memo returns what build returned for g the first time Memo was called
// on g: a form of the grant its one user (the MCP front end: the
// auth.TokenInfo of the grant) makes once rather than per request, kept
// as long as the grant. Concurrent first calls may each run build; one
// value is kept and returned to all. build must not call Memo. nil g: build's
// value, not kept.
func (g *Grant) Memo(build func(*Grant) any) any {
	if g == nil {
		return build(nil)
	}
	if p := g.memo.Load(); p != nil {
		return *p
	}
	v := build(g)
	g.memo.CompareAndSwap(nil, &v)
	return *g.memo.Load()
}

// KeysInForce is how many API keys are in force with the Guard that made
// g (Guard.Count: at least 2 once OAuth access tokens are accepted), 0
// for a grant made by NewGrant or nil: a part of the host that divides
// what it holds among keys (a declared MCP server's places) reads it
// for callers that carry no count of their own.
func (g *Grant) KeysInForce() int {
	if g == nil || g.keys == nil {
		return 0
	}
	return g.keys()
}

// Revoked returns a channel closed when the grant is no longer in force
// (a reload of the keys file dropped or changed the key); never closed
// for --api-key keys.
func (g *Grant) Revoked() <-chan struct{} { return g.life.Done() }

// bind returns ctx ended also when g is revoked, and the function that
// releases the binding (call it when the request is done). Grants that
// are never revoked return ctx as is.
func (g *Grant) bind(ctx context.Context) (context.Context, func()) {
	if g.revoke == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(g.life, func() { cancel(ErrRevoked) })
	return ctx, func() { stop(); cancel(nil) }
}

// ErrRevoked is the cause (context.Cause) of a request context ended
// because its key was removed from the keys file or changed.
var ErrRevoked = errors.New("the API key was revoked (removed from or changed in the keys file)")

// Name is the key's name, for logs ("api-key-N" for the Nth --api-key).
func (g *Grant) Name() string {
	if g == nil {
		return ""
	}
	return g.name
}

// Restricted reports whether g may not see everything (its allow list
// is not "*"), so that listings must be filtered.
func (g *Grant) Restricted() bool { return g != nil && !g.all }

// Allows reports whether g may see and call function fn of plugin. A nil
// Grant allows everything.
func (g *Grant) Allows(plugin, fn string) bool {
	if g == nil || g.all {
		return true
	}
	for _, p := range g.funcs {
		if ok, _ := path.Match(p, fn); ok {
			return true
		}
	}
	for _, p := range g.plugins {
		if ok, _ := path.Match(p, plugin); ok {
			return true
		}
	}
	return false
}

// NewGrant returns the grant of a key named name that may see and call
// what patterns allow (as a keys file's "allow": function globs and
// "plugin:GLOB"; ["*"] everything), without a rate limit: for callers
// that authenticate by other means and for tests. Patterns are not
// checked: a malformed glob matches nothing.
func NewGrant(name string, patterns []string) *Grant {
	return newGrant(name, patterns, nil, false, nil)
}

// newGrant returns the grant of a key named name allowing patterns at
// rate r (nil: unlimited), with a life a reload can end when revocable
// (a key of the keys file, a token's), counting the keys in force with
// keys (Grant.KeysInForce; nil: NewGrant's).
func newGrant(name string, patterns []string, r *Rate, revocable bool, keys func() int) *Grant {
	g := &Grant{name: name, rate: r, allow: append([]string(nil), patterns...), life: context.Background(), keys: keys}
	if revocable {
		g.life, g.revoke = context.WithCancel(context.Background())
	}
	for _, p := range patterns {
		switch glob, isPlugin := strings.CutPrefix(p, PluginPrefix); {
		case p == "*":
			g.all = true
		case isPlugin:
			g.plugins = append(g.plugins, glob)
		default:
			g.funcs = append(g.funcs, p)
		}
	}
	if r != nil {
		g.limiter = rate.NewLimiter(rate.Limit(r.PerSecond), r.burst())
	}
	return g
}

type grantKey struct{}

// WithGrant returns ctx carrying g.
func WithGrant(ctx context.Context, g *Grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// GrantFrom returns the Grant on ctx, or nil (authentication off).
func GrantFrom(ctx context.Context) *Grant {
	g, _ := ctx.Value(grantKey{}).(*Grant)
	return g
}

// Allowed reports whether the caller of ctx may see and call function fn
// of plugin: always true without a Grant on ctx.
func Allowed(ctx context.Context, plugin, fn string) bool {
	return GrantFrom(ctx).Allows(plugin, fn)
}

// AllowsPlugin reports whether g may see and use plugin as a whole: its
// allow list has "*" or a "plugin:GLOB" matching plugin. Function globs
// do not grant it. A nil Grant allows everything. What a plugin serves
// beyond its functions (MCP resources, resource templates, prompts,
// completion) needs it.
func (g *Grant) AllowsPlugin(plugin string) bool {
	if g == nil || g.all {
		return true
	}
	for _, p := range g.plugins {
		if ok, _ := path.Match(p, plugin); ok {
			return true
		}
	}
	return false
}

// AllowedPlugin reports whether the caller of ctx may see and use plugin
// as a whole (Grant.AllowsPlugin): the predicate for what a plugin serves
// beyond its functions.
func AllowedPlugin(ctx context.Context, plugin string) bool {
	return GrantFrom(ctx).AllowsPlugin(plugin)
}

// CodeRateLimited is the JSON-RPC error code of a call refused by its
// key's rate limit (/opentool/call, /opentool/streamCall, MCP
// tools/call), in the range JSON-RPC leaves to servers.
const CodeRateLimited = -32000

// RateLimitedMessage is the message of a call refused by its key's rate
// limit, on every front end.
const RateLimitedMessage = "rate limited: too many calls for this API key"

// Limited reports whether the caller of ctx has a rate limit (a Grant
// whose key has a "rate"): only then is a request's cost worth reading.
func Limited(ctx context.Context) bool {
	g := GrantFrom(ctx)
	return g != nil && g.limiter != nil
}

// Refusal is why a request was refused by its key's rate limit, for the
// front end to answer in its protocol: HTTP 429 (or a JSON-RPC error),
// Retry-After, Message and retry_after_ms.
type Refusal struct {
	// RetryAfter is how long until the request would be allowed
	// (> 0), or, for a cost above the key's burst, until the burst is
	// full again.
	RetryAfter time.Duration
	// Message is RateLimitedMessage, or says that the cost of one
	// request (a JSON-RPC batch of N) is above the key's burst.
	Message string
}

// Limit takes n calls (n >= 1: one per request, one per request of a
// JSON-RPC batch) at once from the rate limiter of the caller's key. It
// returns nil when they may go ahead; else the Refusal, having taken
// nothing. Without a Grant, or for a key without a rate, it returns nil.
// n above the key's burst can never be allowed at once: its Refusal's
// Message says so.
func Limit(ctx context.Context, n int) *Refusal {
	g := GrantFrom(ctx)
	if g == nil || g.limiter == nil || n <= 0 {
		return nil
	}
	now := time.Now()
	if b := g.limiter.Burst(); n > b {
		return &Refusal{RetryAfter: time.Duration(float64(b) / float64(g.limiter.Limit()) * float64(time.Second)),
			Message: fmt.Sprintf("%s: %d requests at once are more than its burst of %d; send fewer in one batch", RateLimitedMessage, n, b)}
	}
	r := g.limiter.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return &Refusal{RetryAfter: d, Message: RateLimitedMessage}
	}
	return nil
}

// RetryAfterMs is d in whole milliseconds, rounded up, at least 1 (the
// retry_after_ms of a rate-limited call).
func RetryAfterMs(d time.Duration) int64 {
	return max(1, int64((d+time.Millisecond-1)/time.Millisecond))
}

// RetryAfterSeconds is d as the value of an HTTP Retry-After header:
// whole seconds, rounded up, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// UntilRevoked returns ctx, ended also (with ErrRevoked as its cause)
// when the API key of ctx's grant is revoked, and the function that
// releases it: for work that outlives the request it came with (a task's
// call), whose context the revocation would otherwise have ended. Without
// a grant ctx comes back as it is.
func UntilRevoked(ctx context.Context) (context.Context, func()) {
	g := GrantFrom(ctx)
	if g == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(g.life, func() { cancel(ErrRevoked) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}
