package cachekit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
)

// Interop mode plants no lease in a shared key, but its load still never
// overwrites a value this Client (or anyone) wrote while the loader ran:
// it stores only where the key holds nothing (SET NX). A plain SET undid
// this Client's Set.
func TestInteropLoadNeverOverwritesAWrite(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Set", "Delete then Set"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, raw := redisClient(t, Options{Interop: true})
			key, err := InteropKey("users", "get_user", name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := GetOrLoadTTL(bg, c, key, time.Minute, func(ctx context.Context) (string, error) {
				if name == "Delete then Set" {
					if err := c.Delete(ctx, key); err != nil {
						return "", err
					}
				}
				return "loaded", c.SetWithTTL(ctx, key, "written", time.Minute)
			})
			if err != nil || v != "loaded" {
				t.Fatalf("GetOrLoad = %q, %v", v, err)
			}
			c.FlushLocal()
			if got, err := Get[string](bg, c, key); err != nil || got != "written" {
				t.Fatalf("after the load Redis holds %q, %v: the load overwrote the Set made while it ran", got, err)
			}
			if n, _ := raw.Exists(bg, key+":lock").Result(); n != 0 {
				t.Fatal("the side lock was left")
			}
		})
	}
	// A key that holds nothing still gets the loaded value.
	c, _ := redisClient(t, Options{Interop: true})
	key, _ := InteropKey("users", "get_user", "fresh")
	if _, err := GetOrLoadTTL(bg, c, key, time.Minute, func(context.Context) (string, error) { return "loaded", nil }); err != nil {
		t.Fatal(err)
	}
	c.FlushLocal()
	if got, err := Get[string](bg, c, key); err != nil || got != "loaded" {
		t.Fatalf("the load stored %q, %v", got, err)
	}
}

// An entry interop mode cannot open is replaced by the load (compared by
// digest, not SET NX), and only that entry.
func TestInteropLoadReplacesUnopenableEntry(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Interop: true})
	key, _ := InteropKey("users", "get_user", 7)
	if err := raw.Set(bg, key, "\xc1 not msgpack", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	v, err := GetOrLoadTTL(bg, c, key, time.Minute, func(context.Context) (string, error) { return "loaded", nil })
	if err != nil || v != "loaded" {
		t.Fatalf("GetOrLoad over an unopenable entry = %q, %v", v, err)
	}
	c.FlushLocal()
	if got, err := Get[string](bg, c, key); err != nil || got != "loaded" {
		t.Fatalf("Redis holds %q, %v: the unopenable entry was not replaced", got, err)
	}
}

// TestInteropLoadLosesToThisClientsWrites: this Client's Delete or Set
// made while an interop-mode load runs wins, in Redis and in L1 (Minimal
// and Production in interop mode, 10 rounds each): the store goes only if
// no write of the key began since the load began, and a write that begins
// while the store is on its way is sent after it (a Delete racing the held
// store: the key stays deleted). Before, the Delete lost 15 of 15: the
// store's SET NX found the key empty. Another Client's Delete is not seen
// (no lease in a shared key): the loaded value is stored, as the docs say.
func TestInteropLoadLosesToThisClientsWrites(t *testing.T) {
	t.Parallel()
	for name, preset := range map[string]func() Options{"Minimal": Minimal, "Production": Production} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, raw := withRedis(t)
			opts := preset()
			opts.Interop, opts.RedisURL = true, srv.URL()
			c := newClient(t, opts)
			other := newClient(t, Options{Interop: true, RedisURL: srv.URL()})
			for round := range 10 {
				keys := map[string]string{}
				for _, write := range []string{"Delete", "Set"} {
					key, err := InteropKey("users", "get_user", name, round, write)
					if err != nil {
						t.Fatal(err)
					}
					keys[write] = key
					_, err = GetOrLoadTTL(bg, c, key, time.Minute, func(ctx context.Context) (string, error) {
						if write == "Delete" {
							return "loaded", c.Delete(ctx, key)
						}
						return "loaded", c.SetWithTTL(ctx, key, "written", time.Minute)
					})
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Fatal(err)
					}
				}
				mustAgree(t, c, raw, keys["Delete"], "")
				mustAgree(t, c, raw, keys["Set"], "written")
			}
			// Another Client's Delete: the load's SET NX finds the key empty.
			key, _ := InteropKey("users", "get_user", name, "other")
			if _, err := GetOrLoadTTL(bg, c, key, time.Minute, func(ctx context.Context) (string, error) {
				mustSet(t, other, key, "before")
				return "loaded", other.Delete(ctx, key)
			}); err != nil {
				t.Fatal(err)
			}
			mustAgree(t, c, raw, key, "loaded")
		})
	}
	// A Delete that begins while the store is on its way goes after it.
	key, _ := InteropKey("users", "get_user", "race")
	c, h, raw := heldClientWith(t, redistest.NewHoldBefore("set.cond", key).Named(seam.CommandName), Options{Interop: true})
	load := async(func() error {
		_, err := GetOrLoadTTL(bg, c, key, time.Minute, func(context.Context) (string, error) { return "loaded", nil })
		return err
	})
	<-h.Held()
	del := async(func() error { return c.Delete(bg, key) })
	h.Release()
	if err := <-load; err != nil {
		t.Fatal(err)
	}
	if err := <-del; err != nil {
		t.Fatal(err)
	}
	mustAgree(t, c, raw, key, "")
}
