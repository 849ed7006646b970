package l2

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// methodClass is what a Store method does to the keys Clients cache, as
// the announcements (AnnounceWrites) must know it.
type methodClass int

const (
	// read: reads keys, changes none.
	read methodClass = iota + 1
	// write: changes a value a Client may hold in L1; it must announce
	// each key it changes, in its own round trip or script
	// (TestEveryWriteAnnounces drives it).
	write
	// placeholder: writes only leases, locks or the name-key marker,
	// which no Client caches (the value that replaces a lease is
	// announced by its own write).
	placeholder
	// noKey: touches no key (configuration, lifecycle, pub/sub).
	noKey
)

// storeMethods classifies every exported method of *Store. A method
// missing here fails TestStoreMethodsClassified: a new write must be
// decided on (and, as a write, driven by announcedWrites).
var storeMethods = map[string]struct {
	class methodClass
	why   string
}{
	"Get":                {read, ""},
	"GetWithTTL":         {read, ""},
	"GetUpTo":            {read, ""},
	"GetLongUpTo":        {read, ""},
	"GetWithTTLUpTo":     {read, ""},
	"GetLongWithTTLUpTo": {read, ""},
	"MGet":               {read, ""},
	"MGetWithTTL":        {read, ""},
	"Exists":             {read, ""},
	"TTL":                {read, ""},
	"ExpireTime":         {read, ""},
	"Scan":               {read, ""},
	"ScanFrom":           {read, ""},
	"ScanEntries":        {read, ""},
	"Ping":               {read, "no key"},

	"Set":            {write, "SET PX"},
	"MSet":           {write, "SET PX per item"},
	"Delete":         {write, "DEL per key"},
	"UnlinkMatching": {write, "UNLINK per key found"},
	"SetCond":        {write, "SET NX or XX, in a script"},
	"SetAbsentMany":  {write, "SetCond NX per item"},
	"Expire":         {write, "PEXPIRE: a copy in L1 must not outlive the new TTL"},
	"Fill":           {write, "SET over the caller's lease"},
	"FillMany":       {write, "Fill per item"},
	"SetIfDigest":    {write, "SET over the entry the caller read"},
	"SwapMany":       {write, "SET KEEPTTL over the bytes the caller read"},

	"Acquire": {placeholder, "plants a lease only in a missing key, over its own " +
		"or an abandoned lease, or over an entry the caller could not open; what " +
		"replaces the lease is a write (Fill) and announced"},
	"AcquireMany": {placeholder, "Acquire per key"},
	"Renew":       {placeholder, "PEXPIRE of the caller's own lease only"},
	"RenewMany":   {placeholder, "Renew per key"},
	"Release": {placeholder, "deletes the caller's own lease (compare-and-delete); " +
		"its plain DEL over maxmemory, which may delete an entry, announces " +
		"(TestReleaseOverMaxmemoryAnnounces)"},
	"TryLock": {placeholder, "SET NX of a token in a lock key ({key}:lock), never a value"},
	"Unlock":  {placeholder, "compare-and-delete of the caller's own lock token"},
	"Marker": {placeholder, "SET NX of the name-key marker, a fingerprint the " +
		"Client reads with Marker, never through L1"},

	"Announce":        {noKey, "publishes announcements; writes no key"},
	"AnnounceWrites":  {noKey, "configuration"},
	"AutoPipeline":    {noKey, "configuration"},
	"CheckDriver":     {noKey, "logs the client's settings"},
	"Client":          {noKey, "accessor"},
	"Close":           {noKey, "lifecycle"},
	"Fence":           {noKey, "configuration"},
	"FenceStats":      {noKey, "counters"},
	"PublishFailures": {noKey, "counter"},
	"RefreshTopology": {noKey, "reloads a cluster's slot map"},
	"Subscribe":       {noKey, "listens to announcements"},
	"Track":           {noKey, "listens to invalidations"},
}

// TestStoreMethodsClassified: every exported method of *Store is in
// storeMethods (an unclassified one fails), every entry names a method,
// and every write is driven by announcedWrites.
func TestStoreMethodsClassified(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(&Store{})
	methods := map[string]bool{}
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		methods[name] = true
		c, ok := storeMethods[name]
		switch {
		case !ok:
			t.Errorf("(*Store).%s is not classified in storeMethods: is it a read, a write (announced), a placeholder write or no key at all?", name)
		case c.class == write && !slices.ContainsFunc(announcedWrites, func(w announcedWrite) bool { return w.method == name }):
			t.Errorf("(*Store).%s is a write that no case of announcedWrites drives", name)
		case c.class == placeholder && c.why == "":
			t.Errorf("(*Store).%s: say why a placeholder write needs no announcement", name)
		}
	}
	for name := range storeMethods {
		if !methods[name] {
			t.Errorf("storeMethods classifies %s, which *Store does not have", name)
		}
	}
	for _, w := range announcedWrites {
		if c := storeMethods[w.method]; c.class != write {
			t.Errorf("announcedWrites drives %s, not classified as a write", w.method)
		}
	}
}

// announcedWrite drives one write method: prep sets up what the write
// needs (through another client, unrecorded) for its keys, and run makes
// the write on s and fails unless it wrote every key. Multi-key writes
// get two keys (on two masters of a cluster), the others one.
type announcedWrite struct {
	method string
	multi  bool
	prep   func(t *testing.T, p *Store, keys []string) any
	run    func(s *Store, keys []string, state any) error
}

var (
	oldVal = []byte("old")
	newVal = []byte("new")
)

// prepSet stores oldVal under every key.
func prepSet(t *testing.T, p *Store, keys []string) any {
	t.Helper()
	for _, k := range keys {
		if err := p.Set(bg, k, oldVal, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	return nil
}

// prepLeases plants a lease in every key and returns them.
func prepLeases(t *testing.T, p *Store, keys []string) any {
	t.Helper()
	leases := make([]string, len(keys))
	for i, k := range keys {
		leases[i] = NewLease()
		if st, _, _, err := p.Acquire(bg, k, leases[i], time.Minute, ""); err != nil || st != LeaseAcquired {
			t.Fatalf("Acquire(%s) = %v, %v", k, st, err)
		}
	}
	return leases
}

func noPrep(*testing.T, *Store, []string) any { return nil }

// allDone is an error unless every item was done without error.
func allDone(done []bool, errs []error) error {
	for i := range done {
		if errs[i] != nil || !done[i] {
			return fmt.Errorf("item %d: done %v, %v", i, done[i], errs[i])
		}
	}
	return nil
}

// stored is an error unless ok and err nil.
func stored(ok bool, err error) error {
	if err == nil && !ok {
		err = fmt.Errorf("not stored")
	}
	return err
}

func items(keys []string) []Item {
	out := make([]Item, len(keys))
	for i, k := range keys {
		out[i] = Item{Key: k, Value: newVal, TTL: time.Minute}
	}
	return out
}

// announcedWrites drives every write method of *Store (storeMethods).
var announcedWrites = []announcedWrite{
	{method: "Set", prep: noPrep, run: func(s *Store, keys []string, _ any) error {
		return s.Set(bg, keys[0], newVal, time.Minute)
	}},
	{method: "MSet", multi: true, prep: noPrep, run: func(s *Store, keys []string, _ any) error {
		return s.MSet(bg, items(keys))
	}},
	{method: "Delete", multi: true, prep: prepSet, run: func(s *Store, keys []string, _ any) error {
		n, err := s.Delete(bg, keys...)
		if err == nil && n != int64(len(keys)) {
			err = fmt.Errorf("deleted %d", n)
		}
		return err
	}},
	{method: "UnlinkMatching", multi: true, prep: prepSet, run: func(s *Store, keys []string, _ any) error {
		prefix := keys[0][:strings.LastIndexByte(keys[0], '/')+1]
		n, err := s.UnlinkMatching(bg, prefix, "*", 500, func([]string) {})
		if err == nil && n != int64(len(keys)) {
			err = fmt.Errorf("unlinked %d", n)
		}
		return err
	}},
	{method: "SetCond", prep: noPrep, run: func(s *Store, keys []string, _ any) error {
		return stored(s.SetCond(bg, keys[0], newVal, time.Minute, false, false))
	}},
	{method: "SetCond", prep: prepSet, run: func(s *Store, keys []string, _ any) error { // XX
		return stored(s.SetCond(bg, keys[0], newVal, time.Minute, true, false))
	}},
	{method: "SetAbsentMany", multi: true, prep: noPrep, run: func(s *Store, keys []string, _ any) error {
		return allDone(s.SetAbsentMany(bg, items(keys)))
	}},
	{method: "Expire", prep: prepSet, run: func(s *Store, keys []string, _ any) error {
		return stored(s.Expire(bg, keys[0], time.Hour))
	}},
	{method: "Fill", prep: prepLeases, run: func(s *Store, keys []string, leases any) error {
		return stored(s.Fill(bg, keys[0], leases.([]string)[0], newVal, time.Minute, false))
	}},
	{method: "FillMany", multi: true, prep: prepLeases, run: func(s *Store, keys []string, leases any) error {
		return allDone(s.FillMany(bg, items(keys), leases.([]string)))
	}},
	{method: "SetIfDigest", prep: prepSet, run: func(s *Store, keys []string, _ any) error {
		return stored(s.SetIfDigest(bg, keys[0], Digest(oldVal), 0, newVal, time.Minute, false))
	}},
	{method: "SwapMany", multi: true, prep: prepSet, run: func(s *Store, keys []string, _ any) error {
		swaps := make([]Swap, len(keys))
		for i, k := range keys {
			swaps[i] = Swap{Key: k, Old: oldVal, New: newVal}
		}
		return allDone(s.SwapMany(bg, "", swaps))
	}},
}

// batchLog records, per node, each round trip go-redis sends: a command
// alone or a pipeline, with the node's address.
type batchLog struct {
	addr string
	mu   *sync.Mutex
	all  *[]batch
}

// batch is one round trip: the node it went to and its commands (each
// argument as text).
type batch struct {
	addr string
	cmds [][]string
}

func (h batchLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h batchLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h batchLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds)
		return next(ctx, cmds)
	}
}

func (h batchLog) add(cmds []redis.Cmder) {
	if len(cmds) == 0 || connInit(cmds[0]) {
		return
	}
	b := batch{addr: h.addr}
	for _, c := range cmds {
		args := make([]string, len(c.Args()))
		for i, a := range c.Args() {
			args[i] = argString(a)
		}
		b.cmds = append(b.cmds, args)
	}
	h.mu.Lock()
	*h.all = append(*h.all, b)
	h.mu.Unlock()
}

// recorder collects the batchLogs of a client's nodes.
type recorder struct {
	mu  sync.Mutex
	all []batch
}

func (r *recorder) hook(addr string) batchLog { return batchLog{addr: addr, mu: &r.mu, all: &r.all} }

// take returns the batches recorded since the last take.
func (r *recorder) take() []batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.all
	r.all = nil
	return out
}

// argString is a command argument as text.
func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(a)
}

// writesKey reports whether cmd writes key: SET, DEL, UNLINK, PEXPIRE
// (the key first) or a script (EVAL, EVALSHA: the key after the count).
func writesKey(cmd []string, key string) bool {
	switch strings.ToLower(cmd[0]) {
	case "set", "del", "unlink", "pexpire":
		return len(cmd) > 1 && cmd[1] == key
	case "eval", "evalsha":
		return len(cmd) > 3 && cmd[3] == key
	}
	return false
}

func isScript(cmd []string) bool {
	name := strings.ToLower(cmd[0])
	return name == "eval" || name == "evalsha"
}

func isPublish(cmd []string) bool { return strings.EqualFold(cmd[0], "publish") }

// isWrite reports a command that may change a key (as once.go's writes).
func isWrite(cmd []string) bool {
	return isScript(cmd) || slices.ContainsFunc([]string{"set", "del", "unlink", "pexpire"},
		func(w string) bool { return strings.EqualFold(cmd[0], w) })
}

// writeTrips counts the batches that hold a write or a PUBLISH (reads
// such as UnlinkMatching's SCANs left out).
func writeTrips(bs []batch) int {
	n := 0
	for _, b := range bs {
		if slices.ContainsFunc(b.cmds, func(c []string) bool { return isPublish(c) || isWrite(c) }) {
			n++
		}
	}
	return n
}

// target is a Redis to run TestEveryWriteAnnounces on.
type target struct {
	rdb, prep redis.UniversalClient
	rec       *recorder
	keys      func(t *testing.T, prefix string, n int) []string
	masterOf  func(key string) string // "" on a single server
}

// standaloneTarget is a private redis-server; every round trip of rdb is
// recorded.
func standaloneTarget(t *testing.T) target {
	srv := redistest.Start(t)
	rec := &recorder{}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	rdb.AddHook(rec.hook(srv.Addr()))
	prep := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close(); _ = prep.Close() })
	return target{rdb: rdb, prep: prep, rec: rec,
		keys: func(_ *testing.T, prefix string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprint(prefix, i)
			}
			return out
		},
		masterOf: func(string) string { return "" }}
}

// clusterTarget is a private 3-master cluster; every round trip to a node
// of rdb is recorded (the node clients' hooks see both the cluster
// client's commands and the auto-pipelined streams').
func clusterTarget(t *testing.T) target {
	cl := redistest.StartCluster(t, 3)
	rec := &recorder{}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), MaxRetries: -1})
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(rec.hook(n.Options().Addr)) })
	prep := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters()})
	t.Cleanup(func() { _ = rdb.Close(); _ = prep.Close() })
	if err := rdb.ForEachMaster(bg, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	masters := cl.Masters()
	return target{rdb: rdb, prep: prep, rec: rec,
		keys: func(t *testing.T, prefix string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = keyOn(t, cl, prefix, func(m string) bool { return m == masters[i%len(masters)] })
			}
			return out
		},
		masterOf: func(key string) string { return cl.MasterOf(slotOf(key)) }}
}

// TestEveryWriteAnnounces drives every write method of *Store
// (announcedWrites) on a Store that announces writes, and proves (a) that
// "ck1 <source> <key>" of each key it wrote arrives on the channel, and
// (b) that it was sent with the write: the same number of round trips
// holding a write or a PUBLISH as the same write on a Store that does not
// announce, and every PUBLISH in the batch that writes its key (a script
// publishes inside itself: none on the wire). It runs on one server (no
// stream: a lone caller's sends are direct anyway) and on a 3-master
// cluster with the per-master streams (AutoPipeline), the keys of a
// multi-key write on two masters. On a cluster client the writes sent as
// plain commands (Set, MSet, Delete, UnlinkMatching) announce once the
// write answered, each PUBLISH on its key's master in a later batch (see
// AnnounceWrites); the scripts as on one server.
func TestEveryWriteAnnounces(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		everyWriteAnnounces(t, standaloneTarget(t), false)
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		everyWriteAnnounces(t, clusterTarget(t), true)
	})
}

// afterOnCluster are the writes a cluster client announces after the
// write answered.
var afterOnCluster = []string{"Set", "MSet", "Delete", "UnlinkMatching"}

func everyWriteAnnounces(t *testing.T, tg target, cluster bool) {
	ps := tg.prep.Subscribe(bg, "inv")
	if _, err := ps.Receive(bg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	heard := ps.Channel()

	quiet := New(tg.rdb) // announces nothing
	loud := New(tg.rdb)
	loud.AnnounceWrites("inv", func(op string, keys []string, err error) {
		t.Errorf("announcement of %s %v failed: %v", op, keys, err)
	})
	if cluster {
		for _, s := range []*Store{quiet, loud} {
			if err := s.AutoPipeline(0); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := New(tg.prep)
	// Every script in every server's cache, so that no NOSCRIPT adds a
	// round trip to one run and not the other.
	for _, sc := range []*redis.Script{acquireScript, fillScript, renewScript, casScript, unlockScript, setCondScript, expireScript, swapScript} {
		load := func(ctx context.Context, c *redis.Client) error { return sc.Load(ctx, c).Err() }
		var err error
		if cc, ok := tg.prep.(*redis.ClusterClient); ok {
			err = cc.ForEachMaster(bg, load)
		} else {
			err = load(bg, tg.prep.(*redis.Client))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	src := string(loud.source)
	if !strings.HasPrefix(src, "ck1 ") || len(src) != len("ck1 ")+2*sourceBytes+1 {
		t.Fatalf("source %q", src)
	}

	for i, w := range announcedWrites {
		n := 1
		if w.multi {
			n = 2
		}
		name := fmt.Sprintf("%s#%d", w.method, i)
		trips := [2]int{}
		var sent []batch
		var keys []string
		for j, s := range []*Store{quiet, loud} {
			keys = tg.keys(t, fmt.Sprintf("%s/%d/", name, j), n)
			state := w.prep(t, p, keys)
			tg.rec.take()
			if err := w.run(s, keys, state); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sent = tg.rec.take()
			trips[j] = writeTrips(sent)
		}
		after := cluster && slices.Contains(afterOnCluster, w.method)
		// (a) Each key's announcement arrives.
		want := map[string]bool{}
		for _, k := range keys {
			want[src+k] = true
		}
		deadline := time.After(5 * time.Second)
		for len(want) > 0 {
			select {
			case m := <-heard:
				if !want[m.Payload] {
					t.Fatalf("%s: heard %q, want one of %q", name, m.Payload, keys)
				}
				delete(want, m.Payload)
			case <-deadline:
				t.Fatalf("%s: no announcement of %v", name, slices.Collect(maps.Keys(want)))
			}
		}
		// (b) It was sent with the write.
		pubs := 0
		for bi, b := range sent {
			for _, c := range b.cmds {
				if !isPublish(c) {
					continue
				}
				pubs++
				key := strings.TrimPrefix(c[2], src)
				writer := slices.IndexFunc(sent, func(b batch) bool {
					return slices.ContainsFunc(b.cmds, func(c []string) bool { return writesKey(c, key) })
				})
				switch {
				case writer < 0:
					t.Errorf("%s: the PUBLISH of %s went without a write of it: %v", name, key, sent)
				case !after && writer != bi:
					t.Errorf("%s: the PUBLISH of %s went in round trip %d, its write in %d: %v", name, key, bi, writer, sent)
				case after && (writer >= bi || b.addr != tg.masterOf(key)):
					t.Errorf("%s: the PUBLISH of %s went in round trip %d to %s, its write in %d (master %s): %v",
						name, key, bi, b.addr, writer, tg.masterOf(key), sent)
				}
			}
		}
		scripted := slices.ContainsFunc(sent, func(b batch) bool { return slices.ContainsFunc(b.cmds, isScript) })
		switch {
		case scripted && pubs != 0:
			t.Errorf("%s: a script's write sent %d PUBLISHes of its own: %v", name, pubs, sent)
		case !scripted && pubs != len(keys):
			t.Errorf("%s: %d PUBLISHes for %d keys: %v", name, pubs, len(keys), sent)
		case !after && trips[1] != trips[0]:
			t.Errorf("%s: %d round trips announcing, %d without: %v", name, trips[1], trips[0], sent)
		}
		t.Logf("%s: %d write round trips without announcements, %d with, %d PUBLISH on the wire", name, trips[0], trips[1], pubs)
	}
}

// TestReleaseOverMaxmemoryAnnounces: where Redis refuses the
// compare-and-delete over maxmemory (OOM; a redis-server 7.0 runs the
// script's DEL, so a fake gives the reply), Release deletes the key with a
// plain DEL, which deletes whatever the key holds by then (an entry written
// over the lease meanwhile included), and announces it in the DEL's round
// trip.
func TestReleaseOverMaxmemoryAnnounces(t *testing.T) {
	t.Parallel()
	fake := redistest.StartFake(t, map[string]string{
		"evalsha": "-OOM command not allowed when used memory > 'maxmemory'.",
		"del":     ":1",
		"publish": ":1",
	})
	rec := &recorder{}
	rdb := redis.NewClient(&redis.Options{Addr: fake.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	rdb.AddHook(rec.hook(fake.Addr()))
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	s.AnnounceWrites("inv", nil)
	if ok, err := s.Release(bg, "k", NewLease()); !ok || err != nil {
		t.Fatalf("Release over maxmemory = %v, %v", ok, err)
	}
	sent := rec.take()
	last := sent[len(sent)-1].cmds
	if len(last) != 2 || !writesKey(last[0], "k") || !isPublish(last[1]) || last[1][2] != string(s.source)+"k" {
		t.Fatalf("round trips %v: want the DEL and its PUBLISH in the last", sent)
	}
}

// TestScriptReportsRefusedAnnouncement: a script whose PUBLISH Redis
// refuses (an ACL user without channel rights) keeps its write and says
// so in its reply: the write succeeds, the failure is counted once per
// write (PublishFailures), the handler hears it with the write's op and
// keys, and announcements pause.
func TestScriptReportsRefusedAnnouncement(t *testing.T) {
	t.Parallel()
	tg := standaloneTarget(t)
	if err := tg.prep.Do(bg, "ACL", "SETUSER", "default", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		keys []string
		op   string
		run  func(s *Store) error
	}{
		{"SetCond", []string{"a"}, "set", func(s *Store) error {
			return stored(s.SetCond(bg, "a", newVal, time.Minute, false, false))
		}},
		{"SetAbsentMany", []string{"b", "c"}, "mset", func(s *Store) error {
			return allDone(s.SetAbsentMany(bg, items([]string{"b", "c"})))
		}},
	} {
		var heard []string
		s := New(tg.rdb)
		s.AnnounceWrites("inv", func(op string, keys []string, err error) {
			heard = append(heard, fmt.Sprint(op, keys))
		})
		if err := c.run(s); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := fmt.Sprint(c.op, c.keys); s.PublishFailures() != 1 || fmt.Sprint(heard) != "["+want+"]" {
			t.Fatalf("%s: PublishFailures %d, handler heard %v; want 1 and [%s]", c.name, s.PublishFailures(), heard, want)
		}
		if s.announcing() { // refusedReply read the script's error
			t.Fatalf("%s: still announcing after a refusal", c.name)
		}
	}
}
