package statusui

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/frontend/sse"
	"github.com/opentool-host/opentool-host/host/core"
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

	sse.Open(w)
	// buf holds the frames not sent yet; send writes them under the write
	// deadline (package sse); false when the client is gone or too slow.
	buf := make([]byte, 0, 4096)
	send := func() bool {
		err := sse.Send(w, rc, buf, s.cfg.WriteTimeout)
		buf = buf[:0]
		return err == nil
	}
	buf = sse.Greeting(buf, "opentool-host lifecycle events", 2000)
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
			buf = sse.Comment(buf, "ping")
		case ev, ok := <-events:
			if !ok {
				return
			}
			if !keyview.Of(r.Context(), s.src).Event(ev) {
				continue
			}
			buf = appendEvent(buf, ev)
			// Take what else is waiting before flushing, so a burst of
			// events is one write.
			for more := true; more && len(buf) < 32<<10; {
				select {
				case ev, ok := <-events:
					if !ok {
						send()
						return
					}
					if keyview.Of(r.Context(), s.src).Event(ev) {
						buf = appendEvent(buf, ev)
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

// appendEvent appends ev to b as one frame: "event:TYPE" ("message"
// when empty) and its JSON as data (JSON escapes line breaks: one line).
func appendEvent(b []byte, ev core.Event) []byte {
	data, err := json.Marshal(ev)
	if err != nil {
		return b
	}
	name := ev.Type
	if name == "" {
		name = "message"
	}
	return sse.End(append(sse.Head(b, name), data...))
}
