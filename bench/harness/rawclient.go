package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// RawConn is a keep-alive HTTP/1.1 client connection that sends one fixed
// request over and over and reads each response without allocating, so
// that the allocations counted around it are the server's. It handles
// Content-Length and chunked responses. Not safe for concurrent use.
type RawConn struct {
	c    net.Conn
	br   *bufio.Reader
	req  []byte
	body []byte
}

// DialRaw connects to addr ("127.0.0.1:PORT") and prepares the request
// POST path with the JSON body.
func DialRaw(addr, path string, body []byte) (*RawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, len(body))
	req = append(req, body...)
	return &RawConn{c: c, br: bufio.NewReaderSize(c, 64<<10), req: req}, nil
}

// Close closes the connection.
func (r *RawConn) Close() error { return r.c.Close() }

var errBadResponse = errors.New("raw client: malformed HTTP response")

// Do sends the request and returns the status and the body (valid until
// the next Do).
func (r *RawConn) Do() (int, []byte, error) {
	if _, err := r.c.Write(r.req); err != nil {
		return 0, nil, err
	}
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, errBadResponse
	}
	status := int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	length, chunked := -1, false
	for {
		line, err = r.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, errBadResponse
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length = atoi(v)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(v, []byte("chunked"))
		}
	}
	r.body = r.body[:0]
	if !chunked {
		if length < 0 {
			return 0, nil, errBadResponse
		}
		if err := r.read(length); err != nil {
			return 0, nil, err
		}
		return status, r.body, nil
	}
	for {
		line, err = r.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n := hexToInt(line)
		if n < 0 {
			return 0, nil, errBadResponse
		}
		if n == 0 {
			for { // trailers, then the blank line
				line, err = r.br.ReadSlice('\n')
				if err != nil {
					return 0, nil, err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return status, r.body, nil
				}
			}
		}
		if err := r.read(n); err != nil {
			return 0, nil, err
		}
		if _, err := r.br.Discard(2); err != nil {
			return 0, nil, err
		}
	}
}

// read appends n body bytes to r.body.
func (r *RawConn) read(n int) error {
	start := len(r.body)
	if cap(r.body)-start < n {
		nb := make([]byte, start, start+n+4096)
		copy(nb, r.body)
		r.body = nb
	}
	r.body = r.body[:start+n]
	_, err := io.ReadFull(r.br, r.body[start:])
	return err
}

func atoi(b []byte) int {
	n := 0
	if len(b) == 0 {
		return -1
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func hexToInt(b []byte) int {
	if len(b) == 0 || len(b) > 15 {
		return -1
	}
	n := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return n
}
