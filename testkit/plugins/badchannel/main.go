// Command badchannel is a test plugin that offers the data channel and
// then breaks its protocol: every call frame is answered with a result
// for a call id the host never sent (another call's answer, as a
// confused or hostile plugin would send). Its document declares "echo".
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"os"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type tool struct{}

// Load implements pluginsdk.Tool.
func (tool) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool:  "1.1.0",
		Info:      opentool.Info{Title: "Bad channel", Version: "1"},
		Functions: []opentool.Function{{Name: "echo", Description: "Never answered right."}},
	}, nil
}

// Call implements pluginsdk.Tool (reached only over gRPC).
func (tool) Call(context.Context, string, map[string]any) (map[string]any, error) {
	return map[string]any{"over": "grpc"}, nil
}

func main() {
	// Take the channel before the SDK does (it is then gone from the
	// environment), say hello, and answer every call for the wrong id.
	conn, err := wire.OpenPluginChannel()
	if err == nil && conn != nil {
		go func() {
			r := bufio.NewReader(conn)
			var h [16]byte
			for {
				if _, err := io.ReadFull(r, h[:]); err != nil {
					return
				}
				if _, err := r.Discard(int(binary.BigEndian.Uint32(h[0:4]))); err != nil {
					return
				}
				id := binary.BigEndian.Uint64(h[8:16]) + 1000
				var out [16 + 2]byte
				binary.BigEndian.PutUint32(out[0:4], 2)
				out[4] = wire.FrameResult
				binary.BigEndian.PutUint64(out[8:16], id)
				copy(out[16:], "{}")
				_, _ = conn.Write(out[:])
			}
		}()
	}
	pluginsdk.Serve(tool{})
	_ = os.Stdout.Sync()
}
