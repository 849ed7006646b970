package cachekit

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestClaimsTableNamesRealTests: every row of docs/claims.md names the
// tests that prove its promise (or says **no test**), and every test it
// names exists in the module (the bench module included), so a renamed or
// deleted test shows up as a broken claim.
func TestClaimsTableNamesRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/claims.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := testDocs(t) // conformance_test.go: every test of the module, by name
	rowRE := regexp.MustCompile(`^\| ([RP]\d+) \|`)
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		cols := strings.Split(line, "|")
		if len(cols) < 5 {
			t.Errorf("%s: no tests column", m[1])
			continue
		}
		tests := strings.TrimSpace(cols[3])
		if tests == "**no test**" {
			t.Logf("%s has no test", m[1])
			continue
		}
		if tests == "" {
			t.Errorf("%s names no test (write **no test** to say so)", m[1])
		}
		for _, name := range strings.Split(tests, ",") {
			if name = strings.TrimSpace(name); defined[name] == nil {
				t.Errorf("%s names %q, which no _test.go file defines", m[1], name)
			}
		}
	}
	if rows < 40 {
		t.Fatalf("docs/claims.md has %d rows, want every numbered promise (at least 40)", rows)
	}
}
