// Package depcheck holds a test that enforces the dependency arrows of
// ARCHITECTURE.md: protocol, encryption, l1 and l2 are leaves that never
// import each other, and only l2 (plus the composing layers) talks to Redis.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/cachekit-io/cachekit-go"

// leaves may import nothing of this module (internal test helpers aside,
// which only their _test files use and `go list -deps` does not follow).
var leaves = []string{"protocol", "encryption", "l1", "l2"}

// forbidden lists third-party imports a package must not reach, even
// transitively.
var forbidden = map[string][]string{
	"protocol":   {"github.com/redis/go-redis", "github.com/dgraph-io/ristretto", "github.com/vmihailenco/msgpack"},
	"encryption": {"github.com/redis/go-redis", "github.com/dgraph-io/ristretto", "github.com/pierrec/lz4"},
	"l1":         {"github.com/redis/go-redis", "crypto/aes"},
	"l2":         {"github.com/dgraph-io/ristretto", "crypto/aes"},
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestLeavesImportNoSibling(t *testing.T) {
	for _, leaf := range leaves {
		t.Run(leaf, func(t *testing.T) {
			self := module + "/" + leaf
			for _, d := range deps(t, leaf) {
				if d != self && strings.HasPrefix(d, module+"/") {
					t.Errorf("%s imports %s: leaves must not import this module's packages", leaf, d)
				}
				for _, bad := range forbidden[leaf] {
					if d == bad || strings.HasPrefix(d, bad+"/") {
						t.Errorf("%s reaches %s, which its layer must not use", leaf, d)
					}
				}
			}
		})
	}
}
