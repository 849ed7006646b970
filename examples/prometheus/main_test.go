package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScrape: after a load and a hit, /metrics serves the cache's
// counters in the Prometheus text format.
func TestScrape(t *testing.T) {
	h, closeFn, err := newHandler("")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	for range 2 { // a load, then an L1 hit
		if got := get("/user?id=42"); got != "42 user-42\n" {
			t.Fatalf("/user = %q", got)
		}
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`cachekit_operations_total{`,
		`op="get_or_load"`,
		`outcome="loaded"`,
		`outcome="hit"`,
		`cachekit_operation_duration_seconds_bucket{`,
		`cachekit_loader_calls_total{`,
		`cachekit_encrypt_nonces_total`,
		`otel_scope_name="github.com/cachekit-io/cachekit-go/cachekit"`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "user:42") || strings.Contains(metrics, "user-42") {
		t.Error("/metrics holds a key or a value")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", metrics)
	}
}
