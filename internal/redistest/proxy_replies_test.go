package redistest

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DelayReplies: a SET reaches Redis at once while its reply is held past
// the client's deadline (the client sees a timeout, Redis holds the
// value); the held reply still goes in order when the client waits long
// enough; DelayReplies(0) lets replies pass again.
func TestProxyDelayReplies(t *testing.T) {
	srv := Start(t)
	p := StartProxy(t, srv.Addr())
	rdb := proxyClient(t, p)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = direct.Close() })
	if err := rdb.Ping(bg).Err(); err != nil { // the pooled connection is open
		t.Fatal(err)
	}
	early := dialRaw(t, p)
	waitFor(t, time.Second, "both connections open", func() bool { return p.Conns() == 2 })

	p.DelayReplies(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	err := rdb.Set(ctx, "k", "v", 0).Err()
	cancel()
	var ne net.Error
	if !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SET with its reply delayed: %v, want a timeout", err)
	}
	if v, err := direct.Get(bg, "k").Result(); err != nil || v != "v" {
		t.Fatalf("Redis holds %q, %v; want the SET applied although its reply is held", v, err)
	}

	ping := func(c net.Conn) (string, time.Duration) {
		start := time.Now()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := io.ReadFull(c, buf)
		return string(buf[:n]), time.Since(start)
	}
	if got, took := ping(early); got != "+PONG\r\n" || took < 250*time.Millisecond {
		t.Fatalf("a connection open at the delay: %q after %v, want +PONG after about 300ms", got, took)
	}
	if got, took := ping(dialRaw(t, p)); got != "+PONG\r\n" || took > 200*time.Millisecond {
		t.Fatalf("a connection opened later: %q after %v, want +PONG at once", got, took)
	}

	p.DelayReplies(0)
	if err := rdb.Set(bg, "k", "w", 0).Err(); err != nil {
		t.Fatalf("SET after DelayReplies(0): %v", err)
	}
}
