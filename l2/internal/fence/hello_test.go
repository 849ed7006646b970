package fence

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// rawReply sends cmd (inline) on c and returns the reply's bytes as they
// came: everything readable within a short wait after the first byte.
func rawReply(t *testing.T, c net.Conn, cmd string) []byte {
	t.Helper()
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil || len(out) > 0 {
			_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		}
		if err != nil {
			return out
		}
	}
}

// TestHelloIDAgainstTheServer: the ID helloID reads from a real server's
// HELLO reply, RESP3 and RESP2, is the one CLIENT ID reports on the same
// connection (a differential test against the server), whatever the
// points at which the reply's bytes arrive: every prefix asks for more,
// the whole reply gives the ID.
func TestHelloIDAgainstTheServer(t *testing.T) {
	srv := redistest.Start(t)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hello := rawReply(t, c, fmt.Sprintf("HELLO %d", proto))
			line, err := bufio.NewReader(strings.NewReader(string(rawReply(t, c, "CLIENT ID")))).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, ":") {
				t.Fatalf("CLIENT ID reply %q, %v", line, err)
			}
			want, _ := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
			if id, more := helloID(hello); id != want || more {
				t.Fatalf("helloID(HELLO %d reply) = %d, %v; CLIENT ID says %d", proto, id, more, want)
			}
			// The ID is the fourth pair: a prefix cut before it asks for more.
			idAt := strings.Index(string(hello), "id\r\n")
			for n := 0; n < idAt; n++ {
				if id, more := helloID(hello[:n]); id != 0 || !more {
					t.Fatalf("helloID of the first %d bytes = %d, %v; want more", n, id, more)
				}
			}
		})
	}
}

// TestHelloIDRefuses: replies that are no HELLO reply, or have no ID,
// give neither an ID nor a request for more.
func TestHelloIDRefuses(t *testing.T) {
	for _, b := range []string{
		"+OK\r\n",
		"-NOAUTH Authentication required.\r\n",
		"-ERR unknown command 'HELLO'\r\n",
		"*2\r\n$6\r\nserver\r\n$5\r\nredis\r\n", // no id
		"%1\r\n$2\r\nid\r\n$3\r\nabc\r\n",       // an id that is not an integer
		"*1\r\n" + strings.Repeat("x", 100),     // not RESP
	} {
		if id, more := helloID([]byte(b)); id != 0 || more {
			t.Errorf("helloID(%q) = %d, %v; want 0, false", b, id, more)
		}
	}
}

// TestCommandName reads the first command's name of a request as go-redis
// writes it, and nothing from anything else.
func TestCommandName(t *testing.T) {
	for req, want := range map[string]string{
		"*2\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n":     "subscribe",
		"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n": "set",
		"*1\r\n$4\r\nping\r\n*1\r\n$4\r\nping\r\n":  "ping",
		"$9\r\nsubscribe\r\n":                       "",
		"*2\r\n$9\r\nsubscr":                        "",
		"":                                          "",
	} {
		if got := string(commandName([]byte(req))); got != want {
			t.Errorf("commandName(%q) = %q, want %q", req, got, want)
		}
	}
}

// FuzzHelloID: helloID reads any bytes without panicking, and a found ID
// is positive; seeded with HELLO replies of both protocols.
func FuzzHelloID(f *testing.F) {
	f.Add([]byte("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:5\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"))
	f.Add([]byte("*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:42\r\n"))
	f.Add([]byte("-NOAUTH\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, _ := helloID(b); id < 0 {
			t.Fatalf("helloID = %d", id)
		}
		_ = commandName(b)
	})
}

// TestSubscribes tells the subscribing commands, in any case, from the
// rest, and allocates nothing (every write asks).
func TestSubscribes(t *testing.T) {
	for name, want := range map[string]bool{"subscribe": true, "PSUBSCRIBE": true, "ssubscribe": true,
		"xsubscribe": false, "unsubscribe": false, "set": false, "": false, "subscrib": false} {
		if got := subscribes([]byte(name)); got != want {
			t.Errorf("subscribes(%q) = %v", name, got)
		}
	}
	req := []byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n")
	if n := testing.AllocsPerRun(100, func() { _ = subscribes(commandName(req)) }); n != 0 {
		t.Fatalf("%v allocations per write's check", n)
	}
}
