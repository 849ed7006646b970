package l2

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// setCalls is how many SET and EVALSHA commands the server has run since
// its statistics were reset (a script's own SET counts too).
func setCalls(t *testing.T, addr string) (sets, scripts int64) {
	t.Helper()
	info, err := redistest.DoBulk(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	calls := func(name string) int64 {
		for l := range strings.Lines(info) {
			if rest, ok := strings.CutPrefix(l, "cmdstat_"+name+":calls="); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	return calls("set"), calls("evalsha")
}

// TestInjectedRetriesNeverResendWrites: an injected client with
// go-redis's default MaxRetries (3) resends a command whose reply did not
// come within its ReadTimeout; the Store marks its writes so that go-redis
// never does: a Set and a scripted write whose replies are held past the
// read timeout run once on the server (without the mark, twice: the
// resend, on a new connection, is answered), and their errors say the
// outcome is unknown.
func TestInjectedRetriesNeverResendWrites(t *testing.T) {
	writes := map[string]func(s *Store) error{
		"Set": func(s *Store) error { return s.Set(bg, "k", []byte("v"), time.Minute) },
		"SetCond": func(s *Store) error {
			_, err := s.SetCond(bg, "c2", []byte("v"), time.Minute, false, false)
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := redistest.StartProxy(t, srv.Addr())
			// MaxRetries: the default, 3.
			rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
			t.Cleanup(func() { _ = rdb.Close() })
			s := New(rdb)
			if _, err := s.SetCond(bg, "c", []byte("v"), time.Minute, false, false); err != nil { // the script loaded
				t.Fatal(err)
			}
			if _, err := redistest.Do(srv.Addr(), "CONFIG", "RESETSTAT"); err != nil {
				t.Fatal(err)
			}
			p.DelayReplies(time.Second) // the open connection's replies only
			err := write(s)
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("a write whose reply was held past the read timeout = %v, want ErrOutcomeUnknown", err)
			}
			sets, scripts := setCalls(t, srv.Addr())
			if name == "SetCond" {
				sets = 0 // the script's own SET
			}
			if sets+scripts != 1 {
				t.Fatalf("the server ran SET %d times and the script %d times, want one write: go-redis resent it", sets, scripts)
			}
		})
	}
}
