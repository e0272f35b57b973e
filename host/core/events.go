package core

import (
	"sync"
	"time"
)

// Event is one lifecycle event of a plugin, as GET /events streams it.
type Event struct {
	// Time is when it happened.
	Time time.Time `json:"time"`
	// Type is one of the Event* constants.
	Type string `json:"type"`
	// Plugin is the plugin's name.
	Plugin string `json:"plugin"`
	// Message is the log line's message ("plugin crashed").
	Message string `json:"message"`
	// Reason says why, for failures, holds, crashes and collisions.
	Reason string `json:"reason,omitempty"`
}

// Lifecycle event types.
const (
	EventFound      = "found"      // a plugin file appeared
	EventReady      = "ready"      // a process is serving (first start or restart)
	EventReplaced   = "replaced"   // a new file's process took over blue/green
	EventRejected   = "rejected"   // a new file failed; the old process keeps serving
	EventRestarting = "restarting" // the serving process died; a restart follows
	EventFailed     = "failed"     // the plugin serves nothing until its file changes
	EventHeld       = "held"       // opentool.lock held a changed file or definition
	EventChanged    = "changed"    // the serving process reported a new document
	EventRemoved    = "removed"    // the file is gone; the plugin drains and stops
	EventCollision  = "collision"  // a function name another plugin owns
)

// EventHub fans events out to subscribers. A subscriber that does not
// keep up loses events (its channel is never blocked on); Publish never
// waits.
type EventHub struct {
	mu   sync.Mutex
	subs map[chan Event]struct{}
}

// Publish sends ev to every subscriber that has room.
func (e *EventHub) Publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default: // a slow subscriber misses it
		}
	}
}

// Subscribe returns a channel of the lifecycle events from now on
// (buffered: buf events; a subscriber that falls further behind misses
// events) and a function that ends the subscription and closes the
// channel.
func (e *EventHub) Subscribe(buf int) (<-chan Event, func()) {
	ch := make(chan Event, max(buf, 1))
	e.mu.Lock()
	if e.subs == nil {
		e.subs = map[chan Event]struct{}{}
	}
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			e.mu.Lock()
			delete(e.subs, ch)
			e.mu.Unlock()
			close(ch)
		})
	}
}
