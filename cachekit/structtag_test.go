package cachekit

import (
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type jsonTagged struct {
	ID      int64    `json:"id"`
	Name    string   `json:"name,omitempty"`
	Both    string   `json:"json_name" msgpack:"mp_name"`
	Skipped string   `json:"-"`
	Plain   string   // no tags: its Go name
	Tags    []string `json:"tags"`
}

// TestStructTagJSON: with StructTag "json" a struct is stored under its
// json names (msgpack tags first, Go names last), a map written as JSON
// (as the cachekit command does) reads back into the tagged fields, and
// the default keeps Go names.
func TestStructTagJSON(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, StructTag: "json"})
	v := jsonTagged{ID: 42, Name: "Ada", Both: "b", Skipped: "x", Plain: "p", Tags: []string{"t"}}
	mustSet(t, c, "k", v)
	got, err := Get[jsonTagged](bg, c, "k")
	want := v
	want.Skipped = ""
	if err != nil || got.ID != want.ID || got.Name != want.Name || got.Both != want.Both || got.Skipped != "" || got.Plain != "p" || len(got.Tags) != 1 {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, want)
	}
	// The stored map's keys: read it back generically with no tags.
	var m map[string]any
	if err := c.Get(bg, "k", &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "mp_name", "Plain", "tags"} {
		if _, ok := m[k]; !ok {
			t.Errorf("stored map has no %q: %v", k, m)
		}
	}
	if _, ok := m["Skipped"]; ok {
		t.Errorf(`a json:"-" field was stored: %v`, m)
	}

	// What an operator writes as JSON ({"id": 42, ...}) is a msgpack map
	// with those keys.
	mustSet(t, c, "op", map[string]any{"id": 7, "name": "Grace"})
	if got, err := Get[jsonTagged](bg, c, "op"); err != nil || got.ID != 7 || got.Name != "Grace" {
		t.Fatalf("a JSON-shaped map read into json-tagged fields = %+v, %v", got, err)
	}
	byDefault := newClient(t, Options{Redis: rdb, StructTag: ""})
	if got, err := Get[jsonTagged](bg, byDefault, "op"); err != nil || got.ID != 0 {
		t.Fatalf("the default (Go names) read id into ID: %+v, %v", got, err)
	}
	// The default's encoding, for comparison: Go names.
	raw, _ := msgpack.Marshal(v)
	var gm map[string]any
	_ = msgpack.Unmarshal(raw, &gm)
	if _, ok := gm["ID"]; !ok {
		t.Fatalf("msgpack's default names changed: %v", gm)
	}
	if _, err := New(Options{L1MaxBytes: 1 << 20, StructTag: "yaml"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("StructTag yaml = %v, want ErrConfig", err)
	}
}
