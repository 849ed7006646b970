package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one private redis-server process.
type Server struct {
	tb    testing.TB
	dir   string
	port  int
	head  []string // arguments before the harness's own (a config file, --sentinel)
	extra []string // more redis-server arguments
	bus   bool     // cluster node: port+10000 is its cluster bus port

	mu     sync.Mutex
	cmd    *exec.Cmd
	paused bool
}

// Start launches a redis-server on a free loopback port and registers its
// shutdown with tb.Cleanup. It fails the test when redis-server is missing,
// and skips it under -short.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return startWith(tb)
}

// startWith is Start with more redis-server arguments.
func startWith(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	return launch(tb, &Server{tb: tb, dir: tb.TempDir(), extra: extra})
}

// launch picks s's port, starts s and registers its shutdown.
func launch(tb testing.TB, s *Server) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("redistest: real redis-server tests skipped under -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatalf("redistest: redis-server not on PATH (apt-get install -y redis-server): %v", err)
	}
	s.port = s.pickPort()
	s.start()
	tb.Cleanup(func() { s.Resume(); s.Kill() })
	return s
}

// pickPort returns a free port, one that leaves room for the cluster bus
// when s is a cluster node.
func (s *Server) pickPort() int {
	if s.bus {
		return freeClusterPort(s.tb)
	}
	return freePort(s.tb)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a redis:// URL for database 0 of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

func (s *Server) start() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		args := append(append(append([]string(nil), s.head...),
			"--port", strconv.Itoa(s.port),
			"--bind", "127.0.0.1",
			"--dir", s.dir,
			"--dbfilename", "dump.rdb",
			"--save", "",
			"--appendonly", "no",
			"--protected-mode", "yes",
			"--logfile", filepath.Join(s.dir, "redis.log"),
		), s.extra...)
		cmd := exec.Command("redis-server", args...)
		if err := cmd.Start(); err != nil {
			s.tb.Fatalf("redistest: start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if lastErr = waitReady(s.Addr(), 5*time.Second, exited); lastErr == nil {
			s.cmd = cmd
			return
		}
		_ = cmd.Process.Kill()
		<-exited
		s.port = s.pickPort() // the port may have been taken meanwhile
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	s.tb.Fatalf("redistest: redis-server did not become ready: %v\n%s", lastErr, log)
}

// Stop shuts the server down, saving its data set so that Restart brings the
// same keys back (as a Redis with persistence would after a restart).
func (s *Server) Stop() {
	s.halt(func(cmd *exec.Cmd) {
		if _, err := Do(s.Addr(), "SHUTDOWN", "SAVE"); err != nil {
			_ = cmd.Process.Kill()
		}
	})
}

// Kill stops the server at once without saving. It is idempotent.
func (s *Server) Kill() {
	s.halt(func(cmd *exec.Cmd) { _ = cmd.Process.Kill() })
}

// halt takes the running process, if any, stops it with stop and waits for
// its port to close. Only the first of concurrent calls sees the process.
func (s *Server) halt(stop func(*exec.Cmd)) {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	stop(cmd)
	waitGone(s.Addr(), 5*time.Second)
}

// Pause stops the server process with SIGSTOP: it keeps its connections
// but answers nothing, as a hung server does, until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP, true) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
		s.paused = paused
	}
}

// live reports whether the server is running and not paused, that is,
// whether it can answer a command.
func (s *Server) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && !s.paused
}

// Restart starts a stopped server again on the same port and directory.
func (s *Server) Restart() {
	s.tb.Helper()
	port := s.port
	s.start()
	if s.port != port {
		s.tb.Fatalf("redistest: could not restart on port %d", port)
	}
}

// Do sends one command over a fresh connection and returns the first reply
// line (RESP type byte included), for harness use and low-level test setup.
func Do(addr string, args ...string) (string, error) {
	line, _, done, err := do(addr, args)
	defer done()
	return line, err
}

// DoBulk is Do for a command whose reply is a bulk string: it returns the
// string's contents.
func DoBulk(addr string, args ...string) (string, error) {
	line, rd, done, err := do(addr, args)
	defer done()
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 {
		return "", fmt.Errorf("redistest: not a bulk reply: %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// do sends args over a fresh connection and returns the first reply line,
// a reader positioned after it, and done, which closes the connection.
func do(addr string, args []string) (string, *bufio.Reader, func(), error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", nil, func() {}, err
	}
	done := func() { _ = c.Close() }
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", nil, done, err
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), rd, done, err
}

// waitReady waits until the server at addr answers PING, giving up after
// limit or as soon as exited is closed (the process is gone).
func waitReady(addr string, limit time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited (last probe: %v)", err)
		default:
		}
		var reply string
		if reply, err = Do(addr, "PING"); err == nil && reply == "+PONG" {
			return nil
		} else if err == nil {
			err = fmt.Errorf("unexpected reply %q", reply)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

func waitGone(addr string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond every 20 ms until it holds, and fails tb when limit
// passes first. It is the one way this package waits for a real server to
// catch up.
func waitFor(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: %s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handedOut holds every port freePort has returned in this process. A
// stopped server keeps its port for its restart, and parallel tests start
// servers meanwhile: a port is never handed out twice, so another test's
// server cannot take a stopped server's port (and its clients would not
// reach someone else's data).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// reserve marks port as handed out; false when it already was.
func reserve(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

func freePort(tb testing.TB) int {
	tb.Helper()
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("redistest: pick port: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if reserve(p) {
			return p
		}
	}
	tb.Fatalf("redistest: no port that was not handed out before")
	return 0
}

// clusterBusOffset is how far above a cluster node's port its bus port is.
const clusterBusOffset = 10000

// freeClusterPort picks a free port whose cluster bus port (port+10000) is
// a valid port and free too; redis-server refuses to start otherwise.
func freeClusterPort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		p := freePort(tb)
		if p+clusterBusOffset > 65535 {
			continue
		}
		bus := p + clusterBusOffset
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(bus)))
		if err == nil {
			l.Close()
			if reserve(bus) { // the node binds it too: no other server may get it
				return p
			}
		}
	}
	tb.Fatalf("redistest: no free port with a free cluster bus port")
	return 0
}
