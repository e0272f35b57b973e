package wire

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// bufferPool is the gRPC buffer pool of plugin connections. gRPC's default
// pool has tiers of 256 B, 4, 16 and 32 KiB and 1 MiB, and zeroes the
// whole buffer on every Get: each message between 32 KiB and 1 MiB took a
// 1 MiB buffer and cleared it, several times per call (marshal, frame
// reads, unmarshal), which was the largest CPU cost of a 64 KiB call
// after JSON decoding. This pool has a tier at every power of two from
// 256 B to 1 MiB, so a buffer is at most twice its message. Larger
// messages are allocated to size and never pooled, so a burst of large
// results leaves no memory behind in the pool.
var bufferPool mem.BufferPool = boundedPool{tiers: func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	if err != nil {
		panic(err) // the exponents are constants
	}
	return p
}()}

// maxPooled is the largest buffer bufferPool keeps (1 MiB).
const maxPooled = 1 << 20

// boundedPool pools buffers of at most maxPooled bytes in tiers and
// allocates larger ones to size without pooling them (gRPC's tiered pool
// would keep them in a sync.Pool until two garbage collections pass).
type boundedPool struct{ tiers mem.BufferPool }

// Get implements mem.BufferPool.
func (p boundedPool) Get(size int) *[]byte {
	if size > maxPooled {
		b := make([]byte, size)
		return &b
	}
	return p.tiers.Get(size)
}

// Put implements mem.BufferPool; buffers over maxPooled are dropped.
func (p boundedPool) Put(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	p.tiers.Put(b)
}

// poolDialOptions make a host's plugin connection use bufferPool for
// frames and the pooled proto codec for messages. The wire format is
// unchanged (content-subtype "proto"); plugins in other languages need not
// do the same.
func poolDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		experimental.WithBufferPool(bufferPool),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(pooledCodec{})),
	}
}

// poolServerOptions are poolDialOptions for a plugin's gRPC server.
func poolServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		experimental.BufferPool(bufferPool),
		grpc.ForceServerCodecV2(pooledCodec{}),
	}
}

// pooledCodec is gRPC's proto codec (encoding/proto codecV2, same wire
// format and name) with its buffers taken from bufferPool instead of
// mem.DefaultBufferPool.
type pooledCodec struct{}

var _ encoding.CodecV2 = pooledCodec{}

// Marshal implements encoding.CodecV2.
func (pooledCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: failed to marshal, message is %T, want proto.Message", v)
	}
	size := proto.Size(m)
	// UseCachedSize reuses the Size just computed; m is not mutated
	// concurrently (as in gRPC's own codec).
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := bufferPool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		bufferPool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}, nil
}

// Unmarshal implements encoding.CodecV2. proto.Unmarshal copies bytes
// fields, so the buffer is released on return.
func (pooledCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("failed to unmarshal, message is %T, want proto.Message", v)
	}
	buf := data.MaterializeToBuffer(bufferPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Name implements encoding.CodecV2: "proto", gRPC's proto content-subtype.
func (pooledCodec) Name() string { return "proto" }
