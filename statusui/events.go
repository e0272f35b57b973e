package statusui

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/catalog"
	"github.com/opentool-host/opentool-host/host"
)

// handleEvents serves GET /events: the lifecycle events from now on as
// server-sent events,
//
//	event: restarting
//	data: {"time":"...","type":"restarting","plugin":"calculator","message":"plugin crashed","reason":"..."}
//
// with a comment line (": ping") every Config.Heartbeat. The stream
// ends when the client goes away, when Shutdown is called, or when the
// host ends the subscription. The host never waits for a client: one that
// falls Config.EventBuffer events behind misses events, and one that does
// not take what is written within Config.WriteTimeout is cut off.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	events, cancel := s.src.Subscribe(s.cfg.EventBuffer)
	defer cancel()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	h.Set("X-Content-Type-Options", "nosniff")
	bw := bufio.NewWriterSize(w, 4096)
	// send writes what bw holds under a write deadline and flushes it to
	// the client; false when the client is gone or too slow.
	send := func() bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if bw.Flush() != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	bw.WriteString(": opentool-host lifecycle events\nretry: 2000\n\n")
	if !send() {
		return
	}
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-tick.C:
			bw.WriteString(": ping\n\n")
		case ev, ok := <-events:
			if !ok {
				return
			}
			if !catalog.Of(r.Context(), s.src).Event(ev) {
				continue
			}
			writeEvent(bw, ev)
			// Take what else is waiting before flushing, so a burst of
			// events is one write.
			for more := true; more && bw.Buffered() < 32<<10; {
				select {
				case ev, ok := <-events:
					if !ok {
						send()
						return
					}
					if catalog.Of(r.Context(), s.src).Event(ev) {
						writeEvent(bw, ev)
					}
				default:
					more = false
				}
			}
		}
		if !send() {
			return
		}
	}
}

// writeEvent writes one event in the text/event-stream format.
func writeEvent(bw *bufio.Writer, ev host.Event) {
	data, err := json.Marshal(ev) // JSON escapes line breaks: one data line
	if err != nil {
		return
	}
	bw.WriteString("event: ")
	bw.WriteString(eventName(ev.Type))
	bw.WriteString("\ndata: ")
	bw.Write(data)
	bw.WriteString("\n\n")
}

// eventName is t as an SSE event name: no line breaks (which would end
// the field), "message" when empty.
func eventName(t string) string {
	t = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, t)
	if t == "" {
		return "message"
	}
	return t
}
