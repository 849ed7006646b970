package main

import (
	"strings"
	"testing"
)

// TestQuickstartRunsInProcess: README's first command works with neither
// CACHEKIT_REDIS_URL nor CACHEKIT_MASTER_KEY set.
func TestQuickstartRunsInProcess(t *testing.T) {
	t.Setenv("CACHEKIT_REDIS_URL", "")
	t.Setenv("CACHEKIT_MASTER_KEY", "")
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("quickstart: %v", err)
	}
	if !strings.Contains(out.String(), "read back: user 42") {
		t.Fatalf("quickstart printed %q", out.String())
	}
}
