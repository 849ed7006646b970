package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// Kind is a kind of fault.
type Kind string

// The kinds of fault. The proxy kinds need Target.Proxy, Failover needs
// Target.Sentinel, Reshard Target.Cluster, the others Target.Server.
const (
	// DelayRequests holds the requests of chosen connections (every open
	// one, the next to send, or the next to carry a key of the running
	// history) for d, then delivers them in order, even after the client
	// gave up on them: a slow retransmission, a middlebox.
	DelayRequests Kind = "delay-requests"
	// DelayReplies holds the replies of every open connection for d: Redis
	// has run the command, the client does not know.
	DelayReplies Kind = "delay-replies"
	// Reset resets every connection (and every new one) with a TCP RST,
	// or cuts replies in half and then resets, for d.
	Reset Kind = "reset"
	// BlackHole drops every byte both ways, connections left open, for d.
	BlackHole Kind = "blackhole"
	// Pause stops Redis with SIGSTOP for d, then SIGCONT.
	Pause Kind = "sigstop"
	// KillRestart kills Redis (SIGKILL) and starts it again after d, empty
	// (no persistence): every key, lease and script is lost.
	KillRestart Kind = "kill-restart"
	// Evict runs Redis with allkeys-lru and a maxmemory just above its use
	// for d while ballast keys are written: keys, leases included, are
	// evicted.
	Evict Kind = "eviction"
	// FlushDB empties the database (FLUSHDB, or FLUSHDB ASYNC).
	FlushDB Kind = "flushdb"
	// ScriptFlush drops every loaded script (SCRIPT FLUSH).
	ScriptFlush Kind = "script-flush"
	// TrackingKill kills the tracking and subscription connections (CLIENT
	// KILL TYPE pubsub).
	TrackingKill Kind = "tracking-kill"
	// Failover promotes the replica of a Sentinel deployment (SENTINEL
	// FAILOVER) and lasts until the old master answers as a replica;
	// writes the old master acknowledged meanwhile, or shortly before (the
	// replication lag), may be lost.
	Failover Kind = "failover"
	// Reshard moves the slot of a key of the running histories to another
	// master of a Cluster: the slot marked migrating and importing (keys
	// not yet moved are served where they were, new ones by the target:
	// ASK), its keys moved one MIGRATE at a time over d, then the slot
	// assigned to the target everywhere (MOVED).
	Reshard Kind = "reshard"
)

// ProxyKinds are the kinds a proxy injects.
var ProxyKinds = []Kind{DelayRequests, DelayReplies, Reset, BlackHole}

// ServerKinds are the kinds made to one standalone redis-server.
var ServerKinds = []Kind{Pause, KillRestart, Evict, FlushDB, ScriptFlush, TrackingKill}

// Fault is one injected fault.
type Fault struct {
	Kind       Kind
	Start, End time.Time
	// Note says what exactly was done (the mode, the delay).
	Note string
	// Loses: writes acknowledged from Config.LossWindow before Start to End
	// may be lost (a failover).
	Loses bool
}

// Target is what the faults act on.
type Target struct {
	// Server is the standalone redis-server the Clients use (through
	// Proxy when it is set).
	Server *redistest.Server
	Proxy  *redistest.Proxy
	// Sentinel is the deployment of a failover run.
	Sentinel *redistest.Sentinel
	// Cluster is the deployment of a cluster run (DeployCluster).
	Cluster *redistest.Cluster
}

// Schedule injects faults one at a time: a pause, then a fault of a kind
// drawn from Kinds, healed after its duration, and again, until its ctx
// ends.
type Schedule struct {
	Kinds []Kind
	// MaxFault bounds a fault's duration (and a delay's), drawn uniformly
	// from [0, MaxFault]. Default: 600 ms.
	MaxFault time.Duration
	// Gap is the most time between two faults; each pause is drawn from
	// [Gap/2, Gap]. Default: 200 ms.
	Gap  time.Duration
	Seed uint64
	// Count, if not nil, counts the faults as they are injected (for
	// Config.FaultCount).
	Count *atomic.Int64
}

// Nemesis returns the Config.Nemesis that runs s against target. It must
// run on tb's goroutine: a server that cannot be restarted fails tb.
func (s Schedule) Nemesis(tb testing.TB, target Target) func(ctx context.Context, keys func() []string) []Fault {
	if s.MaxFault == 0 {
		s.MaxFault = 600 * time.Millisecond
	}
	if s.Gap == 0 {
		s.Gap = 200 * time.Millisecond
	}
	return func(ctx context.Context, keys func() []string) []Fault {
		rng := rand.New(rand.NewPCG(s.Seed, 0x4e454d45))
		inj := &injector{tb: tb, t: target, rng: rng, keys: keys}
		var faults []Fault
		for {
			// The pause and each fault's duration are timers (ctxwait),
			// not waits for a condition.
			if !ctxwait.Sleep(ctx, s.Gap/2+time.Duration(rng.Int64N(int64(s.Gap/2)+1))) {
				return faults
			}
			kind := s.Kinds[rng.IntN(len(s.Kinds))]
			d := time.Duration(rng.Int64N(int64(s.MaxFault) + 1))
			f := Fault{Kind: kind, Start: time.Now()}
			f.Note, f.Loses = inj.inject(ctx, kind, d)
			f.End = time.Now()
			faults = append(faults, f)
			if s.Count != nil {
				s.Count.Add(1)
			}
		}
	}
}

// injector makes the faults of one Schedule run.
type injector struct {
	tb      testing.TB
	t       Target
	rng     *rand.Rand
	keys    func() []string
	evictOn bool
}

// inject makes a fault of kind lasting d (the instant kinds ignore it),
// heals it, and says what it did.
func (inj *injector) inject(ctx context.Context, kind Kind, d time.Duration) (note string, loses bool) {
	p, srv := inj.t.Proxy, inj.t.Server
	switch kind {
	case DelayRequests:
		switch inj.rng.IntN(3) {
		case 0:
			p.Delay(d)
			note = "every open connection"
		case 1:
			p.DelayNext(d)
			note = "the next connection to send"
		default:
			keys := inj.keys()
			if len(keys) == 0 {
				p.Delay(d)
				note = "every open connection"
				break
			}
			k := keys[inj.rng.IntN(len(keys))]
			p.DelayWhen(d, []byte(fmt.Sprintf("$%d\r\n%s\r\n", len(k), k)))
			note = "the next connection to carry " + k
		}
		ctxwait.Sleep(ctx, d)
		p.Delay(0)
		p.DelayNext(0)
		p.DelayWhen(0, []byte("\x00never\x00"))
		return fmt.Sprintf("%v, %s", d.Round(time.Millisecond), note), false
	case DelayReplies:
		p.DelayReplies(d)
		ctxwait.Sleep(ctx, d)
		p.DelayReplies(0)
		return fmt.Sprintf("%v, every open connection", d.Round(time.Millisecond)), false
	case Reset:
		if inj.rng.IntN(2) == 0 {
			p.Reset()
			note = "reset"
		} else {
			p.ResetMidReply()
			note = "reset mid-reply"
		}
		ctxwait.Sleep(ctx, d)
		p.Pass()
		return fmt.Sprintf("%s for %v", note, d.Round(time.Millisecond)), false
	case BlackHole:
		p.BlackHole()
		ctxwait.Sleep(ctx, d)
		p.Pass()
		return fmt.Sprintf("%v", d.Round(time.Millisecond)), false
	case Pause:
		srv.Pause()
		ctxwait.Sleep(ctx, d)
		srv.Resume()
		return fmt.Sprintf("%v", d.Round(time.Millisecond)), false
	case KillRestart:
		srv.Kill()
		ctxwait.Sleep(ctx, d)
		srv.Restart()
		inj.evictOn = false // the new process has the default configuration
		return fmt.Sprintf("down %v", d.Round(time.Millisecond)), false
	case Evict:
		return inj.evict(ctx, d), false
	case FlushDB:
		args := []string{"FLUSHDB"}
		if inj.rng.IntN(2) == 0 {
			args = append(args, "ASYNC")
		}
		return reply(redistest.Do(srv.Addr(), args...)), false
	case ScriptFlush:
		return reply(redistest.Do(srv.Addr(), "SCRIPT", "FLUSH")), false
	case TrackingKill:
		return "killed " + reply(redistest.Do(srv.Addr(), "CLIENT", "KILL", "TYPE", "pubsub")), false
	case Failover:
		return inj.failover(), true
	case Reshard:
		return inj.reshard(ctx, d), false
	}
	inj.tb.Fatalf("nemesis: unknown fault kind %q", kind)
	return "", false
}

// reshard moves the slot of a key of the running histories (Reshard).
func (inj *injector) reshard(ctx context.Context, d time.Duration) string {
	cl := inj.t.Cluster
	key := "reshard"
	if keys := inj.keys(); len(keys) > 0 {
		key = keys[inj.rng.IntN(len(keys))]
	}
	slot := cl.Slot(inj.tb, key)
	from := cl.MasterOf(slot)
	var others []string
	for _, m := range cl.Masters() {
		if m != from {
			others = append(others, m)
		}
	}
	to := others[inj.rng.IntN(len(others))]
	cl.BeginMigrate(inj.tb, slot, from, to)
	ctxwait.Sleep(ctx, d/2) // keys where they were, new ones on the target
	moved := 0
	for {
		n := cl.MigrateKeys(inj.tb, slot, from, to, 1)
		if n == 0 {
			break
		}
		moved += n
		ctxwait.Sleep(ctx, d/8)
	}
	cl.FinishMigrate(inj.tb, slot, from, to)
	return fmt.Sprintf("slot %d, %d keys, over %v", slot, moved, d.Round(time.Millisecond))
}

// reply is a harness command's reply line, or its error.
func reply(line string, err error) string {
	if err != nil {
		return err.Error()
	}
	return line
}

// evict sets maxmemory just above the memory Redis uses (allkeys-lru) and
// writes 4 KiB ballast keys for d, then lifts the limit.
func (inj *injector) evict(ctx context.Context, d time.Duration) string {
	addr := inj.t.Server.Addr()
	if !inj.evictOn {
		if _, err := redistest.Do(addr, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); err != nil {
			return err.Error()
		}
		inj.evictOn = true
	}
	used, ok := redistest.InfoInt(addr, "memory", "used_memory")
	if !ok {
		return "INFO memory: no used_memory"
	}
	before := evicted(addr)
	if _, err := redistest.Do(addr, "CONFIG", "SET", "maxmemory", strconv.FormatInt(used+128<<10, 10)); err != nil {
		return err.Error()
	}
	ballast := strings.Repeat("b", 4<<10)
	fctx, cancel := context.WithTimeout(ctx, d)
	for i := 0; fctx.Err() == nil; i++ {
		_, _ = redistest.Do(addr, "SET", fmt.Sprintf("ballast:%d", i), ballast)
	}
	cancel()
	_, _ = redistest.Do(addr, "CONFIG", "SET", "maxmemory", "0")
	return fmt.Sprintf("maxmemory %d B for %v: %d keys evicted", used+128<<10, d.Round(time.Millisecond), evicted(addr)-before)
}

// evicted is the server's evicted_keys count.
func evicted(addr string) int64 {
	n, _ := redistest.InfoInt(addr, "stats", "evicted_keys")
	return n
}

// failover forces a Sentinel failover and returns once the old master
// answers as a replica of the new one.
func (inj *injector) failover() string {
	sen := inj.t.Sentinel
	old := sen.MasterAddr(inj.tb)
	sen.Failover(inj.tb)
	now := sen.WaitNewMaster(inj.tb, old, 30*time.Second)
	demoted := testwait.Until(30*time.Second, func() bool {
		info, err := redistest.DoBulk(old, "INFO", "replication")
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
	if !demoted {
		inj.tb.Fatalf("nemesis: the old master %s did not become a replica within 30s", old)
	}
	return fmt.Sprintf("%s -> %s", old, now)
}
