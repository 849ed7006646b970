package redistest

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var bg = context.Background()

// proxyClient is a go-redis client through p that honours ctx deadlines
// and never retries, so each fault shows as the error of one command.
func proxyClient(t *testing.T, p *Proxy) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// isReset reports whether err is what a client sees on a reset connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}

// Every mode in turn on one proxy, through go-redis and raw connections.
func TestProxyModes(t *testing.T) {
	srv := Start(t)
	big := strings.Repeat("x", 64<<10)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = direct.Close() })
	if err := direct.Set(bg, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	p := StartProxy(t, srv.Addr())
	if p.URL() != "redis://"+p.Addr()+"/0" {
		t.Fatalf("URL %q", p.URL())
	}
	rdb := proxyClient(t, p)

	// Pass.
	if err := rdb.Set(bg, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(bg, "k").Result(); err != nil || v != "v" {
		t.Fatalf("Pass GET: %q, %v", v, err)
	}
	if p.Conns() != 1 {
		t.Fatalf("Conns = %d, want 1", p.Conns())
	}

	// BlackHole: the pooled connection stays open, the GET times out.
	p.BlackHole()
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	start := time.Now()
	_, err := rdb.Get(ctx, "k").Result()
	took := time.Since(start)
	cancel()
	var ne net.Error
	if !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BlackHole GET: %v, want a timeout", err)
	}
	if took > 300*time.Millisecond {
		t.Fatalf("BlackHole GET failed after %v, want about 100ms", took)
	}
	t.Logf("BlackHole GET failed after %v: %v", took, err)
	raw := dialRaw(t, p) // go-redis dropped its timed-out connection: raw is the one left
	waitFor(t, time.Second, "black-holed connection held", func() bool { return p.Conns() == 1 })
	if _, err := raw.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := raw.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("BlackHole raw read: %v, want a timeout", err)
	}

	// Reset: open connections are reset at once, new ones on accept.
	p.Reset()
	if n := p.Conns(); n != 0 {
		t.Fatalf("Conns after Reset = %d", n)
	}
	_ = raw.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Reset, open connection: %v, want ECONNRESET", err)
	}
	// A new connection is reset as it is accepted: the reset reaches the
	// dialer either as its first read or, when it comes before connect
	// returns, as the dial's own error (seen once in CI).
	if raw2, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() { _ = raw2.Close() })
		_ = raw2.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := raw2.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("Reset, new connection: %v, want ECONNRESET", err)
		}
	} else if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Reset, dialing a new connection: %v, want ECONNRESET", err)
	}
	if _, err := rdb.Get(bg, "k").Result(); !isReset(err) {
		t.Fatalf("Reset GET: %v, want a reset or EOF", err)
	}

	// ResetMidReply: an error, never a value; the client got part of it.
	p.ResetMidReply()
	if v, err := rdb.Get(bg, "big").Result(); err == nil || v == big {
		t.Fatalf("ResetMidReply GET: %d bytes, %v, want an error", len(v), err)
	}
	raw3 := dialRaw(t, p)
	if _, err := raw3.Write([]byte("GET big\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = raw3.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, err := io.ReadAll(raw3)
	if !errors.Is(err, syscall.ECONNRESET) || len(got) == 0 || len(got) >= len(big) {
		t.Fatalf("ResetMidReply raw: %d bytes then %v, want part of the reply then ECONNRESET", len(got), err)
	}
	t.Logf("ResetMidReply raw: %d of %d bytes then %v", len(got), len(big)+len("$65536\r\n\r\n"), err)

	// Pass again: everything works.
	p.Pass()
	if v, err := rdb.Get(bg, "big").Result(); err != nil || v != big {
		t.Fatalf("Pass GET after faults: %d bytes, %v", len(v), err)
	}
}

func dialRaw(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A connection opened in BlackHole mode forwards once the mode is Pass.
func TestProxyBlackHoleThenPass(t *testing.T) {
	srv := Start(t)
	p := StartProxy(t, srv.Addr())
	p.BlackHole()
	rdb := proxyClient(t, p)
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered through a black hole")
	}
	p.Pass()
	if err := rdb.Ping(bg).Err(); err != nil {
		t.Fatalf("PING after Pass: %v", err)
	}
}

// After the cleanup of a proxy, none of its goroutines is left, whatever
// mode its connections were in, even while the clients keep their sockets.
func TestProxyCleanupEndsGoroutines(t *testing.T) {
	srv := Start(t)
	before := runtime.NumGoroutine()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	t.Run("proxy", func(t *testing.T) {
		p := StartProxy(t, srv.Addr())
		dial := func() net.Conn {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			return c
		}
		a := dial()
		if _, err := a.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Read(make([]byte, 7)); err != nil {
			t.Fatal(err)
		}
		p.BlackHole()
		dial()
		waitFor(t, time.Second, "both connections held", func() bool { return p.Conns() == 2 })
	})
	waitFor(t, time.Second, "proxy goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
