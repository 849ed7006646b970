package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// TestClusterOneRun: against a three-master cluster named by one
// redis+cluster:// URL, scan, stats, rotate and flush each reach every
// master in one run; --cursor, which names a position on one server, is
// refused on a cluster.
func TestClusterOneRun(t *testing.T) {
	s, cl := newClusterStack(t)
	ctx := context.Background()
	old, cur := s.appClient(t, "app:", oldKeyHex), s.appClient(t, "app:", testKeyHex)
	const nOld = 600
	for i := range nOld {
		if err := old.SetWithTTL(ctx, fmt.Sprintf("o:%d", i), "old-secret", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		if err := cur.SetWithTTL(ctx, fmt.Sprintf("c:%d", i), "current", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// The keys are spread over every master.
	for _, m := range cl.Masters() {
		direct := redis.NewClient(&redis.Options{Addr: m})
		n, err := direct.DBSize(ctx).Result()
		_ = direct.Close()
		if err != nil || n < 100 {
			t.Fatalf("master %s holds %d keys (%v): the test needs every master populated", m, n, err)
		}
	}
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)

	code, out, errOut := runIn(envv, "scan", "*", "--prefix", "app:", "--secure", "--summary")
	want := fmt.Sprintf("entries %d: encrypted %d, plain 0, unknown 0\nkeyring: current 20, previous %d, none 0\n", nOld+20, nOld+20, nOld)
	if code != exitOK || out != want {
		t.Fatalf("scan --summary on a cluster: exit %d, %q (stderr %q), want %q", code, out, errOut, want)
	}
	code, out, errOut = runIn(envv, "scan", "c:*", "--prefix", "app:", "--secure", "--json")
	if code != exitOK || strings.Count(out, `"keyring":"current"`) != 20 || strings.Count(out, "\n") != 20 {
		t.Fatalf("scan --json on a cluster: exit %d, %d lines (stderr %q)", code, strings.Count(out, "\n"), errOut)
	}
	if code, out, _ = runIn(envv, "stats", "--prefix", "app:", "--secure"); code != exitOK || !strings.Contains(out, fmt.Sprintf("%d", nOld+20)) {
		t.Fatalf("stats on a cluster: exit %d, %q", code, out)
	}

	if code, _, errOut = runIn(envv, "rotate", "--secure", "--prefix", "app:", "--cursor", "7"); code != exitUsage || !strings.Contains(errOut, "cluster") {
		t.Fatalf("rotate --cursor on a cluster: exit %d, %q; want %d naming the cluster", code, errOut, exitUsage)
	}
	var sum rotateSummary
	code, out, errOut = runIn(envv, "rotate", "--secure", "--prefix", "app:", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil {
		t.Fatalf("rotate on a cluster: exit %d, %q %q (%v)", code, out, errOut, err)
	}
	if sum.Scanned != nOld+20 || sum.Resealed != nOld || sum.AlreadyCurrent != 20 || sum.Failed != 0 || sum.Cursor != 0 || !sum.Complete {
		t.Fatalf("rotate summary %+v", sum)
	}
	onlyCurrent := s.appClient(t, "app:", testKeyHex)
	for i := range nOld {
		k := fmt.Sprintf("o:%d", i)
		if v, err := cachekit.Get[string](ctx, onlyCurrent, k); err != nil || v != "old-secret" {
			t.Fatalf("%s under the current key alone after rotate: %q, %v", k, v, err)
		}
		if d, _ := s.rdb.PTTL(ctx, "app:"+k).Result(); d < 59*time.Minute {
			t.Fatalf("%s TTL %v after rotate, want about an hour", k, d)
		}
	}

	code, out, errOut = runIn(envv, "flush", "--match", "*", "--prefix", "app:", "--yes")
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("%d", nOld+20)) {
		t.Fatalf("flush on a cluster: exit %d, %q %q", code, out, errOut)
	}
	for _, m := range cl.Masters() {
		direct := redis.NewClient(&redis.Options{Addr: m})
		n, err := direct.DBSize(ctx).Result()
		_ = direct.Close()
		if err != nil || n != 0 {
			t.Fatalf("master %s holds %d keys after flush (%v)", m, n, err)
		}
	}
}
