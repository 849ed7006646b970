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
	module + "/internal/seam":     true, // l2 registers its test hook there
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
	rooms, err := exec.Command("go", "list", module+"/internal/...", module+"/cachekit/internal/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(rooms)) {
		if pkg == module+"/internal/redistest" || pkg == module+"/internal/seam" {
			continue // test harnesses: they start Redis servers, or see l2's commands
		}
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).Output()
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

// group is the top-level directory a package of the module belongs to:
// cachekit (with cachekit/internal/...), internal, l1, l2, protocol,
// encryption, cmd, examples.
func group(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// TestTopLevelGraphIsAcyclic: collapsed to its top-level directories, the
// module's import graph (library code, not tests) has no cycle: the root
// internal/ imports no public package (its packages are ground primitives
// and test harnesses), the four leaves import only the root internal/,
// cachekit (with cachekit/internal/) composes them, and cmd and examples
// sit on top. It failed while cachekit's machinery lived in the root
// internal/ (internal -> l2 -> internal).
func TestTopLevelGraphIsAcyclic(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := group(f[0])
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := group(imp); to != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][to] = true
			}
		}
	}
	if len(edges["cachekit"]) < 5 {
		t.Fatalf("cachekit's arrows %v: the graph was not read", edges["cachekit"])
	}
	if len(edges["internal"]) != 0 {
		t.Errorf("the root internal/ imports %v: it must import no public package", edges["internal"])
	}
	// A depth-first search for a back edge.
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		path = append(path, n)
		for m := range edges[n] {
			if color[m] == grey {
				t.Errorf("cycle: %s -> %s", strings.Join(path, " -> "), m)
				return true
			}
			if color[m] == white && visit(m) {
				return true
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return false
	}
	for n := range edges {
		if color[n] == white && visit(n) {
			return
		}
	}
}
