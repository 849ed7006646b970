package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersion: `version` and `--version` print the build's module version
// on one line, exit 0, and write nothing to stderr (in-process).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errb bytes.Buffer
		code := run(args, func(string) string { return "" }, strings.NewReader(""), &out, &errb)
		if code != exitOK || errb.Len() != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if s := out.String(); !strings.HasPrefix(s, "cachekit ") || strings.Count(s, "\n") != 1 || !strings.Contains(s, "(go1.") {
			t.Fatalf("%v printed %q, want one line \"cachekit VERSION (goX.Y)\"", args, s)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"version", "extra"}, func(string) string { return "" }, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Fatalf("version with an argument: exit %d, want %d", code, exitUsage)
	}
}
