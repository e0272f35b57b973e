package host

import "github.com/opentool-host/opentool-host/host/core"

// Subscribe returns a channel of the lifecycle events from now on
// (buffered: buf events; a subscriber that falls further behind misses
// events) and a function that ends the subscription and closes the
// channel (core.EventHub.Subscribe).
func (h *Host) Subscribe(buf int) (<-chan core.Event, func()) {
	return h.events.Subscribe(buf)
}
