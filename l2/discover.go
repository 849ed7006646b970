package l2

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Node discovery for Tracker: which Redis nodes a Tracker keeps a
// listener on, per client type.

// clusterMasters reads the cluster's masters from CLUSTER SLOTS (not from
// the client's cached state, which a failover leaves stale) and returns
// node options built from the cluster client's settings; with one set,
// only the first master CLUSTER SLOTS names (a PUBLISH reaches every node
// of a cluster, so one subscription hears it).
func clusterMasters(ctx context.Context, rdb *redis.ClusterClient, one bool) ([]*redis.Options, error) {
	//lint:ignore SA1019 CLUSTER SLOTS answers on Redis 6 too; CLUSTER SHARDS needs 7.
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	co := rdb.Options()
	seen := map[string]bool{}
	var out []*redis.Options
	for _, s := range slots {
		if len(s.Nodes) == 0 || seen[s.Nodes[0].Addr] {
			continue
		}
		addr := s.Nodes[0].Addr
		seen[addr] = true
		out = append(out, &redis.Options{
			Addr:                       addr,
			Dialer:                     co.Dialer,
			OnConnect:                  co.OnConnect,
			Username:                   co.Username,
			Password:                   co.Password,
			CredentialsProvider:        co.CredentialsProvider,
			CredentialsProviderContext: co.CredentialsProviderContext,
			TLSConfig:                  co.TLSConfig,
			ClientName:                 co.ClientName,
		})
		if one {
			break
		}
	}
	if len(out) == 0 {
		return nil, errors.New("l2: tracking: cluster has no master")
	}
	return out, nil
}

// failoverAddr is the Addr go-redis gives the options of a Sentinel-backed
// (failover) client, whose dialer resolves the master on every dial.
const failoverAddr = "FailoverClient"

// sentinelMaster resolves the current master of a failover client by
// dialing through its dialer, and returns options that connect to that
// address only, so a failover shows up as a new node.
func sentinelMaster(ctx context.Context, base *redis.Options) ([]*redis.Options, error) {
	conn, err := base.Dialer(ctx, base.Network, base.Addr)
	if err != nil {
		return nil, err
	}
	addr := conn.RemoteAddr().String()
	_ = conn.Close()
	o := *base
	o.Addr, o.Dialer = addr, nil
	return []*redis.Options{&o}, nil
}

// ringShards returns the options of every live shard of a ring.
func ringShards(ctx context.Context, rdb *redis.Ring) ([]*redis.Options, error) {
	var mu sync.Mutex
	var out []*redis.Options
	err := rdb.ForEachShard(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		out = append(out, c.Options())
		mu.Unlock()
		return nil
	})
	return out, err
}
