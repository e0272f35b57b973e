package host

import (
	"context"
	"fmt"
)

// CollectItems runs streaming function fn through stream (Host.StreamCall,
// or a front end's Backend's) and collects its items into one JSON object
// {"items":[ITEM,...]}: what a front end without streams (MCP tools/call,
// Open Tool Calling) answers for a streaming function. The object,
// brackets and commas included, may be at most max bytes; the item that
// would pass it ends the call (the plugin is told to cancel) with an
// *Error of KindResultRejected. each, when not nil, is told of every item
// as it arrives (n counts from 1), e.g. to report progress. Errors: the
// stream's, or KindResultRejected.
func CollectItems(ctx context.Context, stream func(ctx context.Context, fn string, args []byte, onItem func([]byte) error) error,
	fn string, args []byte, max int64, each func(n int, item []byte)) ([]byte, error) {
	const closing = len("]}")
	buf := append(make([]byte, 0, 256), `{"items":[`...)
	n := 0
	err := stream(ctx, fn, args, func(item []byte) error {
		sep := 0
		if n > 0 {
			sep = 1
		}
		if int64(len(buf)+sep+len(item)+closing) > max {
			return &Error{Kind: KindResultRejected, Function: fn,
				Message: fmt.Sprintf("the streamed items add up to more than %d bytes", max)}
		}
		if sep > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, item...)
		n++
		if each != nil {
			each(n, item)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(buf, "]}"...), nil
}
