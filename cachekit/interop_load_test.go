package cachekit

import (
	"context"
	"testing"
	"time"
)

// Interop mode plants no lease in a shared key, but its load still never
// overwrites a write this Client (or anyone) made while the loader ran: it
// stores only where the key holds nothing (SET NX). A plain SET undid this
// Client's Set and Delete.
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
