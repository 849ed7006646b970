package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// TestRotate: entries under the old key are re-sealed under the current
// one and open with it alone, keeping their TTL; current, tampered,
// plaintext and other-type keys are untouched; a dry run writes nothing.
// The numbers are the issue's: 6,000 old-key entries of 1 KiB, 200 current,
// 20 tampered (under either key), a plaintext entry. (TestRotateKeepsConcurrentWrites
// covers 100 keys the application rewrites during the run.)
func TestRotate(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	old, cur, plain := s.appClient(t, "app:", oldKeyHex), s.appClient(t, "app:", testKeyHex), s.appClient(t, "app:")
	const nOld = 6000
	value := strings.Repeat("x", 1000)
	for i := range nOld {
		if err := old.SetWithTTL(ctx, fmt.Sprintf("o:%d", i), value, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	const nCur, nTampered = 200, 20
	for i := range nCur {
		if err := cur.SetWithTTL(ctx, fmt.Sprintf("c:%d", i), "current", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := plain.SetWithTTL(ctx, "p:1", "public", time.Hour); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{"app:c:1": s.raw(t, "app:c:1"), "app:p:1": s.raw(t, "app:p:1")}
	for i := range nTampered { // half sealed under the current key, half under the old one
		src := fmt.Sprintf("app:c:%d", i)
		if i%2 == 1 {
			src = fmt.Sprintf("app:o:%d", i)
		}
		tampered := append([]byte(nil), s.raw(t, src)...)
		tampered[len(tampered)-1-i] ^= 1
		k := fmt.Sprintf("app:t:%d", i)
		s.put(t, k, tampered)
		before[k] = tampered
	}
	if err := s.rdb.RPush(ctx, "app:l:1", "x").Err(); err != nil {
		t.Fatal(err)
	}

	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	code, out, errOut := runIn(envv, "rotate", "--secure", "--prefix", "app:", "--dry-run", "--json")
	var sum rotateSummary
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.WouldReseal != nOld || sum.Resealed != 0 {
		t.Fatalf("dry run: exit %d, %q %q (%v)", code, out, errOut, err)
	}
	if got, _ := s.rdb.Get(ctx, "app:o:0").Bytes(); string(got) != string(s.raw(t, "app:o:0")) {
		t.Fatal("dry run wrote")
	}
	sum = rotateSummary{}
	code, out, errOut = runIn(envv, "rotate", "--secure", "--prefix", "app:", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil {
		t.Fatalf("rotate: exit %d, %q %q (%v)", code, out, errOut, err)
	}
	t.Logf("rotate of %d entries (%d of 1 KiB under the old key): %.3f s, %.0f entries/s", sum.Scanned, nOld, sum.Seconds, sum.PerSecond)
	if sum.Resealed != nOld || sum.AlreadyCurrent != nCur || sum.Unreadable != nTampered || sum.Plaintext != 1 || sum.OtherType != 1 || sum.Failed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	onlyCurrent := s.appClient(t, "app:", testKeyHex)
	for i := range nOld {
		k := fmt.Sprintf("o:%d", i)
		v, err := cachekit.Get[string](ctx, onlyCurrent, k)
		if err != nil || v != value {
			t.Fatalf("%s under the current key alone: %d bytes, %v", k, len(v), err)
		}
		if d, _ := s.rdb.PTTL(ctx, "app:"+k).Result(); d < 59*time.Minute || d > time.Hour {
			t.Fatalf("%s TTL %v after rotate, want about an hour", k, d)
		}
	}
	for k, b := range before {
		if got := s.raw(t, k); string(got) != string(b) {
			t.Errorf("%s changed", k)
		}
	}
	// A second run finds everything current.
	sum = rotateSummary{}
	code, out, _ = runIn(envv, "rotate", "--secure", "--prefix", "app:", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.Resealed != 0 || sum.AlreadyCurrent != nOld+nCur {
		t.Fatalf("second run: exit %d, %+v", code, sum)
	}
	// --rate holds the walk to its rate (a dry run reads at about 70,000
	// entries/s here, so 10,000/s is the pacing, not the machine).
	sum = rotateSummary{}
	code, out, _ = runIn(envv, "rotate", "--secure", "--prefix", "app:", "--json", "--dry-run", "--rate", "10000")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.PerSecond > 11000 || sum.PerSecond < 9000 {
		t.Fatalf("--rate 10000: exit %d, %.0f entries/s (%v)", code, sum.PerSecond, err)
	}
	t.Logf("--rate 10000: %.0f entries/s", sum.PerSecond)
	if code, _, _ := runIn(envv, "rotate"); code != exitUsage {
		t.Fatalf("rotate without --secure: exit %d, want %d", code, exitUsage)
	}
}

// TestRawSwapKeepsNewerValues: the compare-and-set rotate writes through
// replaces only the bytes it read, and keeps the TTL.
func TestRawSwapKeepsNewerValues(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.appClient(t, "")
	s.put(t, "a", []byte("read"))
	s.put(t, "b", []byte("written by the app meanwhile"))
	if err := s.rdb.PExpire(ctx, "a", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	done, errs := c.Raw().Swap(ctx, []cachekit.RawSwap{
		{Key: "a", Old: []byte("read"), New: []byte("resealed")},
		{Key: "b", Old: []byte("read"), New: []byte("resealed")},
		{Key: "gone", Old: []byte("read"), New: []byte("resealed")},
	})
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || !done[0] || done[1] || done[2] {
		t.Fatalf("RawSwap = %v, %v; want [true false false], no errors", done, errs)
	}
	if string(s.raw(t, "a")) != "resealed" || string(s.raw(t, "b")) != "written by the app meanwhile" {
		t.Fatal("RawSwap wrote the wrong keys")
	}
	if d, _ := s.rdb.PTTL(ctx, "a").Result(); d < 59*time.Minute {
		t.Fatalf("RawSwap lost the TTL: %v", d)
	}
	if n, _ := s.rdb.Exists(ctx, "gone").Result(); n != 0 {
		t.Fatal("RawSwap created a missing key")
	}
}

// TestRotateKeepsConcurrentWrites: keys the application rewrites while
// rotate runs hold the application's values afterwards, whichever of the
// two reached each key first.
func TestRotateKeepsConcurrentWrites(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	app, ring := s.appClient(t, "", oldKeyHex), s.appClient(t, "", testKeyHex, oldKeyHex)
	for i := range 3000 {
		if err := app.SetWithTTL(ctx, fmt.Sprintf("k:%d", i), "original", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	done := make(chan int, 1)
	go func() {
		code, _, _ := runIn(envv, "rotate", "--secure", "--rate", "20000")
		done <- code
	}()
	for i := range 100 { // rewritten while rotate walks (3000 entries at 20,000/s: 0.15 s)
		if err := app.SetWithTTL(ctx, fmt.Sprintf("k:%d", i*30), fmt.Sprintf("app-%d", i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if code := <-done; code != exitOK {
		t.Fatalf("rotate: exit %d", code)
	}
	for i := range 100 {
		k := fmt.Sprintf("k:%d", i*30)
		if v, err := cachekit.Get[string](ctx, ring, k); err != nil || v != fmt.Sprintf("app-%d", i) {
			t.Fatalf("%s = %q, %v; want the application's app-%d", k, v, err, i)
		}
	}
}

// TestPrefixIsLiteralAndBadKeys: a --prefix with glob characters matches
// only itself (scan and flush never reach another application's keys),
// and rotate counts a key no AAD can be built for as unreadable and goes
// on.
func TestPrefixIsLiteralAndBadKeys(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	s.put(t, "app1:user", []byte("another application's"))
	s.put(t, "app[1]:user", []byte("ours"))
	code, out, _ := runIn(s.env, "scan", "*", "--prefix", "app[1]:", "--json")
	if code != exitOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"key":"user"`) {
		t.Fatalf("scan with a glob-like prefix: exit %d\n%s", code, out)
	}
	if code, out, _ := runIn(s.env, "flush", "--match", "*", "--prefix", "app[1]:", "--yes"); code != exitOK || out != "deleted 1 keys\n" {
		t.Fatalf("flush: exit %d, %q", code, out)
	}
	if n, _ := s.rdb.Exists(ctx, "app1:user").Result(); n != 1 {
		t.Fatal("flush with prefix app[1]: deleted app1:user")
	}

	old := s.appClient(t, "", oldKeyHex)
	for i := range 5 {
		if err := old.Set(ctx, fmt.Sprintf("o:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	s.put(t, "bad\xff", []byte("not UTF-8: no AAD exists for this key"))
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	var sum rotateSummary
	code, out, errOut := runIn(envv, "rotate", "--secure", "--json", "--match", "[ob]*")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.Resealed != 5 || sum.Unreadable != 1 {
		t.Fatalf("rotate with a non-UTF-8 key: exit %d, %+v, %q", code, sum, errOut)
	}
}

// TestRotateResumesAtCursor: a run started at the cursor a stopped run
// reported re-seals what that run had not reached, and a finished run
// reports cursor 0.
func TestRotateResumesAtCursor(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	old := s.appClient(t, "", oldKeyHex)
	for i := range 3000 {
		if err := old.Set(ctx, fmt.Sprintf("r:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	// Where a run stopped after its first batch would resume, and how
	// many entries that batch held.
	var cursor uint64
	first := 0
	stop := fmt.Errorf("stop")
	_ = old.Raw().ScanFrom(ctx, "*", 0, func(batch []cachekit.RawEntry, next uint64) error {
		first, cursor = len(batch), next
		return stop
	})
	if cursor == 0 || first == 0 {
		t.Fatalf("the first batch (%d entries) ended the walk", first)
	}
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	var sum rotateSummary
	code, out, errOut := runIn(envv, "rotate", "--secure", "--json", "--cursor", fmt.Sprint(cursor))
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.Cursor != 0 || !sum.Complete {
		t.Fatalf("resumed run: exit %d, %q %q", code, out, errOut)
	}
	if sum.Resealed < 3000-first || sum.Resealed == 3000 {
		t.Fatalf("a run resumed after a first batch of %d re-sealed %d of 3000", first, sum.Resealed)
	}
	sum = rotateSummary{}
	code, out, _ = runIn(envv, "rotate", "--secure", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.Resealed+sum.AlreadyCurrent != 3000 {
		t.Fatalf("run from the start: exit %d, %+v", code, sum)
	}
}

// TestRotateExit5: when Redis refuses the writes (here: out of memory),
// rotate exits 5, says how many entries it could not re-seal, and changes
// nothing.
func TestRotateExit5(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	old := s.appClient(t, "", oldKeyHex)
	for i := range 10 {
		if err := old.Set(ctx, fmt.Sprintf("f:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	before := s.raw(t, "f:0")
	if err := s.rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.rdb.ConfigSet(context.Background(), "maxmemory", "0").Err() })
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	code, _, errOut := runIn(envv, "rotate", "--secure")
	if code != exitPartial || !strings.HasPrefix(errOut, "cachekit: rotate: 10 entries could not be re-sealed") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("rotate with Redis out of memory: exit %d, stderr %q", code, errOut)
	}
	if err := s.rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if got := s.raw(t, "f:0"); string(got) != string(before) {
		t.Fatal("a refused rotate changed an entry")
	}
}
