package redistest

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Fake is a RESP2 server that knows a handful of commands, for reply
// shapes a real redis-server cannot be configured to give (the errors of
// managed services). It answers PING with +PONG, CLIENT ID with :1, and
// every command whose name (its first one or two words, lower case, joined
// by a space: "client tracking", "subscribe") is in Replies with that
// reply line verbatim (for example "-ERR command 'client|tracking' is not
// allowed"); anything else gets "-ERR unknown command". It records the
// command names it received.
type Fake struct {
	ln      net.Listener
	replies map[string]string

	mu    sync.Mutex
	seen  []string
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// StartFake starts a Fake on 127.0.0.1 that gives replies; it is stopped
// (listener and every connection closed, goroutines ended) when the test
// ends. It needs no redis-server and does not skip under -short.
func StartFake(tb testing.TB, replies map[string]string) *Fake {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Fake{ln: ln, replies: replies, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.accept()
	tb.Cleanup(f.stop)
	return f
}

// Addr returns the fake's host:port.
func (f *Fake) Addr() string { return f.ln.Addr().String() }

// Seen returns the names of the commands received so far, in order.
func (f *Fake) Seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *Fake) stop() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Fake) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = true
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

// serve answers one connection's commands until it closes.
func (f *Fake) serve(c net.Conn) {
	defer f.wg.Done()
	defer func() { _ = c.Close() }()
	rd := bufio.NewReader(c)
	for {
		args, err := readCommand(rd)
		if err != nil {
			return
		}
		name := strings.ToLower(args[0])
		if len(args) > 1 && (name == "client" || name == "acl" || name == "config") {
			name += " " + strings.ToLower(args[1])
		}
		f.mu.Lock()
		f.seen = append(f.seen, name)
		f.mu.Unlock()
		reply, ok := f.replies[name]
		switch {
		case ok:
		case name == "ping":
			reply = "+PONG"
		case name == "client id":
			reply = ":1"
		default:
			reply = "-ERR unknown command"
		}
		if _, err := c.Write([]byte(reply + "\r\n")); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n <= 0 {
		return nil, net.ErrClosed
	}
	args := make([]string, n)
	for i := range args {
		if _, err := rd.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimRight(arg, "\r\n")
	}
	return args, nil
}
