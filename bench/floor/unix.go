package floor

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The unix-socket floor is the raw request/response round trip between
// two Go processes: a 4-byte length and the payload each way over a unix
// stream socket, one connection per client, no framing beyond the length,
// no multiplexing, no serialization. The peer answers {"echo":PAYLOAD}, as
// the other floors do. It is what a plugin hop (host.Call to a plugin over
// the data channel) is compared with.
//
// The peer is the benchmark binary re-executed with UnixEnv set to the
// socket path (TestMain calls ServeUnix); StartUnix starts it.

// UnixEnv is the environment variable that makes a re-executed benchmark
// binary the unix-socket floor's peer: its value is the socket path.
const UnixEnv = "OPENTOOL_BENCH_UNIX"

// ServeUnix listens on the unix socket path, prints "ready" on stdout and
// answers every connection's frames until stdin ends (the benchmark
// process went away). It returns the exit code.
func ServeUnix(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "unix floor:", err)
		return 1
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		ln.Close()
		os.Exit(0)
	}()
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0
		}
		go serveUnixConn(c)
	}
}

func serveUnixConn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	var in, out []byte
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if cap(in) < int(n) {
			in = make([]byte, n)
		}
		in = in[:n]
		if _, err := io.ReadFull(r, in); err != nil {
			return
		}
		out = binary.BigEndian.AppendUint32(out[:0], n+9)
		out = append(out, `{"echo":`...)
		out = append(out, in...)
		out = append(out, '}')
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// UnixClient is the benchmark side of the unix-socket floor.
type UnixClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	path  string
	mu    sync.Mutex
	conns []*unixConn // one per client (worker index)
}

type unixConn struct {
	c   net.Conn
	r   *bufio.Reader
	out []byte
	in  []byte
}

// StartUnix starts the peer: exe (the benchmark binary) with UnixEnv set
// to a socket in dir, and waits for it to listen.
func StartUnix(exe string, args []string, dir string) (*UnixClient, error) {
	path := filepath.Join(dir, "floor.sock")
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), UnixEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("unix floor peer did not start: %q %v", line, err)
	}
	return &UnixClient{cmd: cmd, stdin: stdin, path: path}, nil
}

// PID is the peer's process id.
func (u *UnixClient) PID() int { return u.cmd.Process.Pid }

// conn returns worker's connection, dialling it on first use.
func (u *UnixClient) conn(worker int) (*unixConn, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.conns) <= worker {
		u.conns = append(u.conns, nil)
	}
	if u.conns[worker] == nil {
		c, err := net.Dial("unix", u.path)
		if err != nil {
			return nil, err
		}
		u.conns[worker] = &unixConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
	}
	return u.conns[worker], nil
}

// Call sends args on worker's connection and reads the answer; only one
// goroutine may use a worker index at a time.
func (u *UnixClient) Call(worker int, args []byte) ([]byte, error) {
	c, err := u.conn(worker)
	if err != nil {
		return nil, err
	}
	c.out = binary.BigEndian.AppendUint32(c.out[:0], uint32(len(args)))
	c.out = append(c.out, args...)
	if _, err := c.c.Write(c.out); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if cap(c.in) < int(n) {
		c.in = make([]byte, n)
	}
	c.in = c.in[:n]
	if _, err := io.ReadFull(c.r, c.in); err != nil {
		return nil, err
	}
	if len(c.in) != len(args)+9 {
		return nil, errors.New("unix floor: reply is not the echo of the arguments")
	}
	return c.in, nil
}

// Close closes the connections and ends the peer.
func (u *UnixClient) Close() {
	u.mu.Lock()
	for _, c := range u.conns {
		if c != nil {
			c.c.Close()
		}
	}
	u.mu.Unlock()
	u.stdin.Close()
	_ = u.cmd.Wait()
}
