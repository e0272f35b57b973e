package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// NewHTTPClient returns a keep-alive HTTP/1.1 client for conns concurrent
// callers on loopback; timeout bounds each request (0: none).
func NewHTTPClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns + 16,
			MaxIdleConnsPerHost: conns + 16,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// CallBody returns the JSON-RPC request body calling fn with params (a
// JSON object) and the numeric id.
func CallBody(fn string, params []byte, id int) []byte {
	b := make([]byte, 0, len(params)+len(fn)+64)
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = strconv.AppendQuote(b, fn)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '}')
}

// Params returns a params object {"data":"xxx…"} of exactly size bytes
// (at least 11).
func Params(size int) []byte {
	n := max(size-len(`{"data":""}`), 0)
	b := make([]byte, 0, size)
	b = append(b, `{"data":"`...)
	for i := range n {
		b = append(b, 'a'+byte(i%26))
	}
	return append(b, `"}`...)
}

var jsonCT = []string{"application/json"}

// Post sends body to url and reads the response into *buf (reused). It
// returns the HTTP status and the body (aliasing *buf).
func Post(ctx context.Context, c *http.Client, url string, body []byte, buf *bytes.Buffer) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header["Content-Type"] = jsonCT
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, buf.Bytes(), nil
}

// EchoResultPrefix is how a successful echo response starts.
const EchoResultPrefix = `{"jsonrpc":"2.0","result":{"echo":`

// CheckEcho verifies that resp is the JSON-RPC success response to an
// echo call with params: {"jsonrpc":"2.0","result":{"echo":PARAMS},"id":…}.
func CheckEcho(resp, params []byte) error {
	want := len(EchoResultPrefix) + len(params)
	if len(resp) < want+len(`},"id":1}`) || !bytes.HasPrefix(resp, []byte(EchoResultPrefix)) ||
		!bytes.Equal(resp[len(EchoResultPrefix):want], params) {
		if len(resp) > 300 {
			resp = resp[:300]
		}
		return fmt.Errorf("not the echo of the params: %s", resp)
	}
	return nil
}
