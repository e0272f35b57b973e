package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// A client's own upstream session that ends by itself (its server
// process exited, or the server closed the connection) is forgotten at
// once (openUpstream): the client's next call gets a new one, a new
// process for a command server, initialized with the client's identity
// and capabilities as the first was (its log level set again, its roots
// asked again by the server as it likes); its resource subscriptions on
// the old one are lost (the adapter keeps none to send again). The call
// in flight then ends as the plugin's exit (pluginsdk.Error.Exited:
// plugin_exited, retryable) naming that process and its exit status, and
// the end is logged (WARN, with the server, the client session, the
// status and the client's restarts so far). A client whose own process
// keeps exiting gets its next one after a backoff (ownRestartDelay): the
// first restart at once, then 250 ms doubling up to 10 s, counted from
// 0 again once one ran ownStableRun; the client's call waits for it
// (within its deadline), so that a crash loop starts at most one process
// per client per delay, never one per call.

// ownStableRun is how long a client's own session must have run for
// its end to count as a first exit again (ownRestartDelay).
const ownStableRun = 10 * time.Second

// ownRestartMax caps ownRestartDelay.
const ownRestartMax = 10 * time.Second

// ownRestartDelay is the wait before the client's own session that
// follows n consecutive quick exits starts: none for n ≤ 1, then
// 250 ms·2^(n-2), at most ownRestartMax.
func ownRestartDelay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := 250 * time.Millisecond
	for i := 2; i < n && d < ownRestartMax; i++ {
		d *= 2
	}
	return min(d, ownRestartMax)
}

// restartDelay is the wait before sess's new own session starts, after
// the ends recorded (ownExited); under clients.mu.
func (a *Adapter) restartDelay(sess *mcpsession.Session) time.Duration {
	return ownRestartDelay(a.clients.exits[sess])
}

// ownExited records that u, sess's own session connected at since,
// ended by itself, forgets it, and returns the client's ends so far.
func (a *Adapter) ownExited(sess *mcpsession.Session, u *upstream, since time.Time) int {
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	if a.clients.by[sess] == u {
		delete(a.clients.by, sess)
	}
	if a.clients.exits == nil {
		a.clients.exits = map[*mcpsession.Session]int{}
	}
	n, known := a.clients.exits[sess]
	if !known {
		go a.forgetExits(sess, a.endedLocked())
	}
	if time.Since(since) >= ownStableRun {
		n = 0
	}
	n++
	a.clients.exits[sess] = n
	a.ownRestarts.Add(1)
	return n
}

// ClientRestarts implements pluginsdk.ClientRestarter: how many of the
// clients' own sessions ended by themselves (ownExited) since the
// adapter was made, every client together (shown on /health as the
// plugin's client_restarts).
func (a *Adapter) ClientRestarts() int { return int(a.ownRestarts.Load()) }

// forgetExits drops sess's recorded ends once it ends or ended closes.
func (a *Adapter) forgetExits(sess *mcpsession.Session, ended <-chan struct{}) {
	select {
	case <-sess.Done:
	case <-ended:
	}
	a.clients.mu.Lock()
	defer a.clients.mu.Unlock()
	delete(a.clients.exits, sess)
}

// waitRestart waits d, less when sess or ended ends first, and reports
// whether the wait ran its course.
func waitRestart(d time.Duration, sess *mcpsession.Session, ended <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-sess.Done:
	case <-ended:
	}
	return false
}

// ownGone is the exit status of u's process (a URL server: that its
// connection closed) once u ended by itself and was forgotten, waiting
// up to exitNoticeWait for that; ok false when it did not.
func (u *upstream) ownGone() (status string, ok bool) {
	t := time.NewTimer(exitNoticeWait)
	defer t.Stop()
	select {
	case <-u.gone:
	case <-t.C:
		return "", false
	}
	if u.proc == nil {
		return "the connection closed", true
	}
	return u.proc.status(), true
}

// ownExitError is the error of a call of tool on r whose connection
// broke with err because r's client's own session ended (its process
// exited): the plugin's exit, retryable (pluginsdk.Error.Exited); nil
// when r is not a client's own session, or it did not end so.
func (a *Adapter) ownExitError(ctx context.Context, r *relay, tool string, err error) error {
	if r == nil || r.own == nil || ctx.Err() != nil || !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	status, ok := r.own.ownGone()
	if !ok {
		return nil
	}
	return &pluginsdk.Error{Code: pluginsdk.CodeToolFailure, Exited: status,
		Message: fmt.Sprintf("MCP server %q: this client session's own server process exited during the call of tool %q (%s); its next call starts a new one", a.launch.Name, tool, status)}
}

// watchOwn returns a channel closed when cs ends by itself.
func watchOwn(cs *mcp.ClientSession) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(c)
	}()
	return c
}
