package frontdoor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host"
)

// waitDrainDelay waits delay while the server goes on serving (readiness
// already answers "draining"). A second SIGINT or SIGTERM, or the server
// failing (errc), ends it early; SIGHUP calls hup and goes on waiting.
func waitDrainDelay(delay time.Duration, sigs <-chan os.Signal, errc <-chan error, hup func(), log hclog.Logger) {
	if delay <= 0 {
		return
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return
		case s := <-sigs:
			if s == syscall.SIGHUP {
				hup()
				continue
			}
			log.Info("second signal: drain delay cut short", "signal", s.String())
			return
		case err := <-errc:
			log.Warn("http server", "error", err)
			return
		}
	}
}

// shutdown closes the listener, waits for the requests in flight and
// then stops every plugin, all within timeout (what is left then is
// killed). It returns how many connections a client opened but never
// used it closed (freshConns).
func shutdown(ctx context.Context, srv *http.Server, fresh *freshConns, h *host.Host, timeout time.Duration, log hclog.Logger) int {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	shut, unused := make(chan struct{}), make(chan int, 1)
	go fresh.closeUnusedUntil(shut, unused)
	err := srv.Shutdown(sctx)
	close(shut)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "error", err)
	}
	if err := h.Close(sctx); err != nil {
		log.Warn("host close", "error", err)
	}
	return <-unused
}

// unusedConnAge is how long a connection may stay without a first
// request before a shutting-down server closes it (freshConns): one that
// old was opened ahead of need (a proxy's pool) and is not about to carry
// a request, which arrives within milliseconds of a connect.
const unusedConnAge = time.Second

// freshConns tracks the server's connections that have not sent a byte
// yet (http.StateNew). http.Server.Shutdown closes idle keep-alive
// connections at once but waits 5 s for such a connection, and proxies
// open them ahead of need (Go's http.Transport keeps the connection it
// dialed for a request that another connection then served): every
// drain would take 5 s more. Give track to http.Server.ConnState.
type freshConns struct {
	mu sync.Mutex
	m  map[net.Conn]time.Time // accepted at
}

func newFreshConns() *freshConns { return &freshConns{m: map[net.Conn]time.Time{}} }

// track is an http.Server.ConnState hook.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.m[c] = time.Now()
	} else {
		delete(f.m, c)
	}
}

// closeUnused closes the connections without a first request for at
// least age, and reports how many.
func (f *freshConns) closeUnused(age time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for c, at := range f.m {
		if time.Since(at) >= age {
			_ = c.Close()
			delete(f.m, c)
			n++
		}
	}
	return n
}

// closeUnusedUntil calls closeUnused(unusedConnAge) every 100 ms until
// done is closed, then sends how many it closed on n; run it beside
// http.Server.Shutdown (the listener is closed: no new connection
// comes).
func (f *freshConns) closeUnusedUntil(done <-chan struct{}, n chan<- int) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	closed := 0
	for {
		closed += f.closeUnused(unusedConnAge)
		select {
		case <-done:
			n <- closed
			return
		case <-tick.C:
		}
	}
}
