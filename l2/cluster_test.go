package l2

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// clusterNode starts a one-node Redis Cluster (cluster mode on, every slot
// assigned to the node) and returns a ClusterClient for it. A single node is
// enough to exercise the cluster code paths: go-redis routes by slot and
// the server rejects any multi-key command whose keys span slots
// (CROSSSLOT), which is exactly what slot grouping must avoid.
func clusterNode(t *testing.T) *redis.ClusterClient {
	t.Helper()
	if testing.Short() {
		t.Skip("real redis-server tests skipped under -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not on PATH: %v", err)
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	testwait.For(t, 10*time.Second, func() bool { return direct.Ping(bg).Err() == nil }, "cluster node starting")
	if err := direct.Do(bg, "CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(numSlots-1)).Err(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() bool { return strings.Contains(direct.ClusterInfo(bg).Val(), "cluster_state:ok") },
		"cluster reaching state ok")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// pipelineCounter counts pipelines and the commands in them.
type pipelineCounter struct {
	pipelines, cmds atomic.Int64
}

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && connInit(cmds[0]) {
			return next(ctx, cmds)
		}
		h.pipelines.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func TestClusterMGetAndDeleteGroupBySlot(t *testing.T) {
	cc := clusterNode(t)
	s := New(cc)
	keys := []string{"foo", "bar", "{user1000}.following", "{user1000}.followers", "missing", "foo"}
	for _, k := range keys[:4] {
		if err := s.Set(bg, k, []byte("v:"+k), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// Sanity: the server really rejects a cross-slot MGET.
	if err := cc.Do(bg, "MGET", "foo", "bar").Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot MGET = %v, want CROSSSLOT", err)
	}

	h := &pipelineCounter{}
	cc.AddHook(h)
	got, err := s.MGet(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	groups := int64(len(groupBySlot(keys)))
	if p, c := h.pipelines.Load(), h.cmds.Load(); p != 1 || c != 2*groups {
		t.Fatalf("MGet sent %d pipelines with %d commands, want 1 with %d (one MGET and one EXISTS per slot)", p, c, 2*groups)
	}
	for i, k := range keys {
		want := "v:" + k
		if k == "missing" {
			if got[i] != nil {
				t.Fatalf("key %d: value for a missing key", i)
			}
			continue
		}
		if string(got[i]) != want {
			t.Fatalf("key %d: wrong value", i)
		}
	}

	if n, err := s.Delete(bg, "foo", "bar", "{user1000}.following", "missing"); err != nil || n != 3 {
		t.Fatalf("Delete = %d, %v; want 3", n, err)
	}
	if err := s.MSet(bg, []Item{{"foo", []byte("1"), time.Minute}, {"bar", []byte("2"), time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.GetWithTTL(bg, "bar"); err != nil || string(v) != "2" {
		t.Fatalf("GetWithTTL = %q, %v", v, err)
	}
}

// TestClusterMGetWithTTL: values and remaining TTLs across slots in one
// call, a missing key, a key without expiry, in key order.
func TestClusterMGetWithTTL(t *testing.T) {
	rdb := clusterNode(t)
	s := New(rdb)
	keys := []string{"a", "b", "missing", "forever", "{a}x", "hash"}
	for _, k := range []string{"a", "b", "{a}x"} {
		if err := s.Set(bg, k, []byte("v-"+k), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Set(bg, "forever", "v-forever", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(bg, "hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	vals, ttls, err := s.MGetWithTTL(bg, keys)
	var wt *WrongTypeError
	if !errors.As(err, &wt) || !errors.Is(err, ErrWrongType) || !slices.Equal(wt.Index, []int{5}) {
		t.Fatalf("MGetWithTTL err = %v, want a *WrongTypeError naming index 5 (hash)", err)
	}
	for i, k := range keys {
		switch k {
		case "missing", "hash": // no value; the hash is named in the error
			if vals[i] != nil {
				t.Errorf("%s read %q", k, vals[i])
			}
		case "forever":
			if string(vals[i]) != "v-forever" || ttls[i] != 0 {
				t.Errorf("%s = %q ttl %v, want no expiry", k, vals[i], ttls[i])
			}
		default:
			if string(vals[i]) != "v-"+k || ttls[i] <= 50*time.Second || ttls[i] > time.Minute {
				t.Errorf("%s = %q ttl %v", k, vals[i], ttls[i])
			}
		}
	}
}
