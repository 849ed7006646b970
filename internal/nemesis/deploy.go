package nemesis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// Env is where a run's Clients and faults go.
type Env struct {
	Target Target
	// Addr is how a Client reaches Redis: a redis:// URL (through the
	// proxy), or "sentinel:" and the sentinels' addresses, comma separated.
	Addr string
	// Foreign writes keys directly to the server (the master), on a fresh
	// connection each time (redistest.Do: 2 s deadline), as another tool.
	Foreign Foreign
}

// foreignBytes is what a foreign SET stores: no Client's entry.
const foreignBytes = "another SDK's entry"

// Deploy starts a redis-server behind a proxy (the proxy kinds and the
// server kinds), or, when kinds holds Failover, a Sentinel deployment (a
// master, a replica, one sentinel).
func Deploy(tb testing.TB, kinds []Kind) Env {
	tb.Helper()
	for _, k := range kinds {
		if k == Failover {
			sen := redistest.StartSentinel(tb)
			return Env{
				Target: Target{Sentinel: sen},
				Addr:   "sentinel:" + strings.Join(sen.SentinelAddrs(), ","),
				Foreign: func(ctx context.Context, key string, set bool) error {
					addr, ok := sen.CurrentMaster()
					if !ok {
						return errors.New("nemesis: no sentinel reported the master")
					}
					return foreign(addr, key, set)
				},
			}
		}
	}
	srv := redistest.Start(tb)
	proxy := redistest.StartProxy(tb, srv.Addr())
	return Env{
		Target:  Target{Server: srv, Proxy: proxy},
		Addr:    proxy.URL(),
		Foreign: func(ctx context.Context, key string, set bool) error { return foreign(srv.Addr(), key, set) },
	}
}

// foreign DELs key on addr, or SETs it to foreignBytes for a minute.
func foreign(addr, key string, set bool) error {
	var reply string
	var err error
	if set {
		reply, err = redistest.Do(addr, "SET", key, foreignBytes, "PX", "60000")
	} else {
		reply, err = redistest.Do(addr, "DEL", key)
	}
	if err == nil && strings.HasPrefix(reply, "-") {
		err = errors.New(reply[1:])
	}
	return err
}

// StartChild runs this test binary (no tests) with env set to spec, as a
// child that Serves a Client, and returns that Client; tb's cleanup ends
// it. The binary's TestMain must call Serve when env is set.
func StartChild(tb testing.TB, env, spec string) *Remote {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+spec)
	r, err := StartRemote(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// ClusterPrefix starts the Addr of a Cluster Env (DeployCluster): then,
// comma separated, each master's address, ">", and its proxy's address.
const ClusterPrefix = "cluster:"

// DeployCluster starts a Redis Cluster of three masters, each behind a
// proxy of its own. The faults go to the first master and its proxy
// (Reshard to any master); the other two stay healthy, so a run checks that one master's faults
// neither break nor hold the others' keys. Clients dial a master through
// its proxy (ClusterProxies maps the addresses the cluster announces).
func DeployCluster(tb testing.TB) Env {
	tb.Helper()
	cl := redistest.StartCluster(tb, 3)
	var pairs []string
	var first *redistest.Proxy
	for i, m := range cl.Masters() {
		p := redistest.StartProxy(tb, m)
		if i == 0 {
			first = p
		}
		pairs = append(pairs, m+">"+p.Addr())
	}
	return Env{
		Target: Target{Server: cl.Nodes[0], Proxy: first, Cluster: cl},
		Addr:   ClusterPrefix + strings.Join(pairs, ","),
		// Direct to the masters, following ASK and MOVED while a slot
		// moves (Reshard).
		Foreign: func(ctx context.Context, key string, set bool) error {
			if set {
				return cl.Set(ctx, key, foreignBytes, time.Minute)
			}
			return cl.Del(ctx, key)
		},
	}
}

// ClusterProxies parses a Cluster Env's Addr (after ClusterPrefix) into
// each master's address and its proxy's.
func ClusterProxies(spec string) map[string]string {
	m := map[string]string{}
	for _, pair := range strings.Split(spec, ",") {
		if node, proxy, ok := strings.Cut(pair, ">"); ok {
			m[node] = proxy
		}
	}
	return m
}
