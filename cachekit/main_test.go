package cachekit

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain runs the cross-process lease tests' child processes, or the
// tests.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(leaseChild(strings.Fields(spec))) // a process of a cross-process lease test
	}
	if spec := os.Getenv(nemesisChildEnv); spec != "" {
		os.Exit(nemesisChild(strings.Fields(spec))) // a Client of a nemesis run in another process
	}
	os.Exit(m.Run())
}

// testBareBound is the bound the tests' Clients give each Redis call
// without Reliability (Options.bareBound): on the shared 2-core machine,
// under the race detector and beside other packages' tests, a Set has
// taken over 200 ms, and tests of other behaviour must not read that as a
// timeout. newClient sets it unless the test chose one; the tests of the
// bound itself set defaultBound.
const testBareBound = 5 * time.Second

// defaultBound makes opts keep the default AttemptTimeout as the bound of
// calls without Reliability (newClient widens it otherwise).
func defaultBound(opts *Options) { opts.bareBound = -1 }
