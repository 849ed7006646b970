package cachekit

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/guard"
)

// TestMain widens the bound of calls made without the reliability stack
// (Options.Reliability nil) to 5 s: on the shared 2-core machine, under
// the race detector and beside other packages' tests, a Set has taken
// over 200 ms, and tests of other behaviour must not read that as a
// timeout. The tests of the bound call defaultBareBound.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(leaseChild(strings.Fields(spec))) // a process of a cross-process lease test
	}
	if spec := os.Getenv(nemesisChildEnv); spec != "" {
		os.Exit(nemesisChild(strings.Fields(spec))) // a Client of a nemesis run in another process
	}
	guard.SetBareBound(5 * time.Second)
	os.Exit(m.Run())
}

// defaultBareBound restores the default bound (AttemptTimeout, 200 ms) for
// the rest of t. Only tests that are not parallel may call it.
func defaultBareBound(t *testing.T) {
	t.Helper()
	old := guard.SetBareBound(0)
	t.Cleanup(func() { guard.SetBareBound(old) })
}
