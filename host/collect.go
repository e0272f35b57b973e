package host

import (
	"context"
	"fmt"

	"github.com/opentool-host/opentool-host/host/core"
)

// CollectItems runs streaming function fn through stream (Host.StreamCall,
// or a front end's Backend's) and collects its items into one JSON object
// {"items":[ITEM,...]}: what a front end without streams (MCP tools/call,
// Open Tool Calling) answers for a streaming function. The object,
// brackets and commas included, may be at most max bytes; the item that
// would pass it ends the call (the plugin is told to cancel) with an
// *Error of KindResultRejected. x is the caller's side of the call
// (nil: none); its Item, when set, is told of every item as it arrives
// (n counts from 1), e.g. to report progress, and the plugin's own
// progress notifications are then dropped (collecting: the items are the
// progress). Errors: the stream's, or KindResultRejected.
func CollectItems(ctx context.Context, x *core.Exchange, stream func(ctx context.Context, x *core.Exchange, fn string, args []byte, onItem func([]byte) error) error,
	fn string, args []byte, max int64) ([]byte, error) {
	var each func(n int, item []byte)
	if x != nil {
		each = x.Item
	}
	items := newItems(fn, max, each)
	if err := stream(ctx, collecting(x), fn, args, items.add); err != nil {
		return nil, err
	}
	return items.object(), nil
}

// items collects the items of a stream of function fn into one JSON
// object {"items":[ITEM,...]} of at most max bytes, telling each (when
// not nil) of every item it takes.
type items struct {
	fn   string
	max  int64
	each func(n int, item []byte)
	buf  []byte
	n    int // items so far
}

// newItems returns an empty collection.
func newItems(fn string, max int64, each func(n int, item []byte)) *items {
	return &items{fn: fn, max: max, each: each, buf: append(make([]byte, 0, 256), `{"items":[`...)}
}

// add appends item and tells c.each; the item that would take the object
// past max is an *Error of KindResultRejected.
func (c *items) add(item []byte) error {
	const closing = len("]}")
	sep := 0
	if c.n > 0 {
		sep = 1
	}
	if int64(len(c.buf)+sep+len(item)+closing) > c.max {
		return &core.Error{Kind: core.KindResultRejected, Function: c.fn,
			Message: fmt.Sprintf("the streamed items add up to more than %d bytes", c.max)}
	}
	if sep > 0 {
		c.buf = append(c.buf, ',')
	}
	c.buf = append(c.buf, item...)
	c.n++
	if c.each != nil {
		c.each(c.n, item)
	}
	return nil
}

// object returns the collected object, closed.
func (c *items) object() []byte { return append(c.buf, "]}"...) }
