package cachekit

import (
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// FuzzReadPath feeds arbitrary stored bytes to the composed read path of
// every mode (Get into a struct and into any, GetBytes, MGet; from Redis and
// from L1): it must never panic, and every failure must be a miss or an
// *EntryError (the entry's fault), never anything else and never a value
// with an error. Seeds are real entries each mode wrote, and their cuts.
func FuzzReadPath(f *testing.F) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(mr.Close)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	f.Cleanup(func() { _ = rdb.Close() })
	type rec struct {
		ID   int64  `msgpack:"id"`
		Name string `msgpack:"name"`
	}
	modes := map[string]Options{
		"plain":             {},
		"plain/nocompress":  {DisableCompression: true},
		"encrypted":         {Encryption: encConfig("")},
		"encrypted/nocompr": {Encryption: encConfig(""), DisableCompression: true},
		"interop":           {Interop: true},
		"interop/encrypted": {Interop: true, Encryption: encConfig("")},
	}
	key := func(mode, k string) string {
		if modes[mode].Interop {
			ik, err := InteropKey("fuzz", "read", k)
			if err != nil {
				f.Fatal(err)
			}
			return ik
		}
		return k
	}
	clients := map[string]*Client{}
	seeds := 0
	for name, o := range modes {
		o.Redis, o.L1MaxBytes = rdb, 1<<20
		c, err := New(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { _ = c.Close() })
		clients[name] = c
		for i, v := range []any{"v", []byte{1, 2, 3}, rec{ID: 7, Name: "n"}, map[string]any{"a": []any{1, "x"}}} {
			key := key(name, name+string(rune('a'+i)))
			if err := c.Set(bg, key, v); err != nil {
				f.Fatal(err)
			}
			b, err := rdb.Get(bg, key).Bytes()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			f.Add(b[:len(b)/2])
			seeds += 2
		}
	}
	if seeds == 0 {
		f.Fatal("no seeds")
	}
	f.Fuzz(func(t *testing.T, stored []byte) {
		for name, c := range clients {
			fz, other := key(name, "fz"), key(name, "other")
			if err := rdb.Set(bg, fz, stored, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			c.l1.Clear()
			check := func(what string, err error) {
				var ee *EntryError
				if err != nil && !errors.Is(err, ErrNotFound) && !errors.As(err, &ee) && !errors.Is(err, ErrNotBytes) {
					t.Fatalf("%s %s: %v (%T), want a miss or an *EntryError", name, what, err, err)
				}
			}
			var r rec
			check("Get(struct) from Redis", c.Get(bg, fz, &r))
			var a any
			check("Get(any)", c.Get(bg, fz, &a))
			_, err := c.GetBytes(bg, fz)
			check("GetBytes", err)
			_, err = MGet[string](bg, c, []string{fz, other})
			check("MGet", err)
			// The same bytes found in L1.
			c.l1.Clear()
			c.l1.Set(fz, stored, time.Minute)
			check("Get(any) from L1", c.Get(bg, fz, &a))
		}
	})
}
