package bench

import (
	"testing"
	"time"

	"github.com/go-redis/cache/v9"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// BenchmarkPeer measures github.com/go-redis/cache/v9 on the same values and
// the same redis-server: its TinyLFU local cache (unencrypted) and msgpack,
// as its README sets it up.
func BenchmarkPeer(b *testing.B) {
	for _, sz := range fixture.Sizes {
		b.Run("GoRedisCache/LocalHit/bytes/"+sz.Name, func(b *testing.B) { benchPeerLocalHit(b, fixture.NewBytes(sz.N), sz.N) })
		b.Run("GoRedisCache/LocalHit/struct/"+sz.Name, func(b *testing.B) { benchPeerLocalHit(b, fixture.NewRecord(sz.N), sz.N) })
		if sz.N == 1024 {
			b.Run("GoRedisCache/LocalHit/profile/1KiB", func(b *testing.B) { benchPeerLocalHit(b, fixture.NewProfile(1024), 1024) })
			b.Run("GoRedisCache/LocalHit/profile/256B", func(b *testing.B) { benchPeerLocalHit(b, fixture.NewProfile(256), 256) })
			b.Run("GoRedisCache/LocalHit/member/1KiB", func(b *testing.B) { benchPeerLocalHit(b, fixture.NewMember(1024), 1024) })
			b.Run("GoRedisCache/LocalHit/member/256B", func(b *testing.B) { benchPeerLocalHit(b, fixture.NewMember(256), 256) })
		}
	}
	b.Run("GoRedisCache/RedisGet/bytes/1KiB", benchPeerRedisGet)
	b.Run("GoRedisCache/Set/bytes/1KiB", benchPeerSet)
}

// newPeer returns a go-redis/cache Cache on the shared Redis with a TinyLFU
// local cache of 1000 entries and a one-minute local TTL.
func newPeer(b *testing.B) *cache.Cache {
	return cache.New(&cache.Options{Redis: rawRedis(b), LocalCache: cache.NewTinyLFU(1000, time.Minute)})
}

func benchPeerLocalHit[T any](b *testing.B, v T, n int) {
	cd := newPeer(b)
	key := benchKey(b, "peer")
	if err := cd.Set(&cache.Item{Ctx: bg, Key: key, Value: v, TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var dst T
	for b.Loop() {
		if err := cd.Get(bg, key, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPeerRedisGet(b *testing.B) {
	cd := newPeer(b)
	key := benchKey(b, "peer")
	if err := cd.Set(&cache.Item{Ctx: bg, Key: key, Value: fixture.NewBytes(1024), TTL: time.Hour}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	var dst []byte
	runRedis(b, func() error { return cd.GetSkippingLocalCache(bg, key, &dst) })
}

func benchPeerSet(b *testing.B) {
	cd := newPeer(b)
	key := benchKey(b, "peer")
	v := fixture.NewBytes(1024)
	b.SetBytes(1024)
	runRedis(b, func() error { return cd.Set(&cache.Item{Ctx: bg, Key: key, Value: v, TTL: time.Hour}) })
}
