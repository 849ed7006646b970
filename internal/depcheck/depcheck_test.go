package depcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/cachekit-io/cachekit-go"

// leaves may import nothing of this module (internal test helpers aside,
// which only their _test files use and `go list -deps` does not follow)
// beyond their own internal packages (protocol/internal/...), which Go
// lets no one else import and whose imports the same check covers, being
// the leaf's dependencies too.
var leaves = []string{"protocol", "encryption", "l1", "l2"}

// sharedInternal lists the internal plumbing packages a leaf may use: they
// are nobody's public API and import nothing of this module themselves.
var sharedInternal = map[string]bool{
	module + "/internal/stripe":   true,
	module + "/internal/ctxwait":  true,
	module + "/internal/gcmchunk": true,
	module + "/internal/chunked":  true,
}

// forbidden lists third-party imports a package must not reach, even
// transitively.
var forbidden = map[string][]string{
	"protocol":   {"github.com/redis/go-redis", "github.com/dgraph-io/ristretto", "github.com/vmihailenco/msgpack"},
	"encryption": {"github.com/redis/go-redis", "github.com/dgraph-io/ristretto", "github.com/pierrec/lz4"},
	"l1":         {"github.com/redis/go-redis"},
	"l2":         {"github.com/dgraph-io/ristretto"},
}

// forbiddenDirect lists packages a layer must not import itself (they may
// still arrive transitively: go-redis uses crypto/tls, which uses AES).
var forbiddenDirect = map[string][]string{
	"l1": {"crypto/aes", "crypto/cipher"},
	"l2": {"crypto/aes", "crypto/cipher"},
	// The tool goes through the client, so it reads and writes exactly what
	// the library does.
	"cmd/cachekit": {"github.com/redis/go-redis/v9"},
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestNoForbiddenDirectImports(t *testing.T) {
	for pkg, bad := range forbiddenDirect {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+"/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			for _, b := range bad {
				if imp == b {
					t.Errorf("%s imports %s directly: sealing belongs to the encryption package", pkg, imp)
				}
			}
		}
	}
}

func TestOnlyComposersReachTheLeaves(t *testing.T) {
	// The composing layer must exist and depend on every leaf; otherwise
	// the arrows above are vacuous.
	got := strings.Join(deps(t, "cachekit"), " ")
	for _, leaf := range leaves {
		if !strings.Contains(got, module+"/"+leaf+" ") && !strings.HasSuffix(got, module+"/"+leaf) {
			t.Errorf("cachekit does not import %s", leaf)
		}
	}
}

func TestLeavesImportNoSibling(t *testing.T) {
	for _, leaf := range leaves {
		t.Run(leaf, func(t *testing.T) {
			self := module + "/" + leaf
			for _, d := range deps(t, leaf) {
				own := strings.HasPrefix(d, self+"/internal/")
				if d != self && !own && strings.HasPrefix(d, module+"/") && !sharedInternal[d] {
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

// TestGoRedisStaysInL2: besides l2, only cachekit/options.go names go-redis
// (the type of Options.Redis), and the internal packages cachekit composes
// reach Redis only through l2.
func TestGoRedisStaysInL2(t *testing.T) {
	const goredis = "github.com/redis/go-redis/v9"
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{"\n"}}{{join .GoFiles "\n"}}`, module+"/cachekit").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	dir, files := lines[0], lines[1:]
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), `"`+goredis+`"`) && f != "options.go" {
			t.Errorf("cachekit/%s imports go-redis; only options.go may (Options.Redis)", f)
		}
	}
	for _, pkg := range []string{"internal/guard", "internal/flight", "internal/observe", "internal/swr", "internal/codec", "internal/names"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+"/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			if strings.HasPrefix(imp, "github.com/redis/") {
				t.Errorf("%s imports %s; Redis is l2's", pkg, imp)
			}
			if imp == module+"/cachekit" {
				t.Errorf("%s imports cachekit: the rooms never point back", pkg)
			}
		}
	}
}
