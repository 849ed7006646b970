package cachekit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
	"github.com/redis/go-redis/v9"
)

// testDocs maps every Test, Fuzz and Example function of the module's
// _test.go files (the bench module included) to the doc comments of its
// definitions (a name may be defined in more than one package).
func testDocs(t *testing.T) map[string][]string {
	t.Helper()
	docs := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			if n := fd.Name.Name; strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz") || strings.HasPrefix(n, "Example") {
				docs[n] = append(docs[n], fd.Doc.Text())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestConformanceTable checks docs/conformance.md against the vendored
// conformance index (testdata/conformance/requirements.json) and the code:
// every row's id is in the index and binds an SDK, once; every id that
// binds an SDK has a row; a tested or partial row names tests, each of
// which exists and whose doc comment cites the row's id; an n/a row names
// no test and gives its reason; the counts this page and README.md state
// are the table's; and the sdks.json record's fixture sums are those of
// testdata/protocol.
func TestConformanceTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/conformance/requirements.json")
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Files map[string]struct {
			Requirements map[string]struct {
				Binds string `json:"binds"`
			} `json:"requirements"`
		} `json:"files"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	binds := map[string]string{}
	for _, f := range index.Files {
		for id, r := range f.Requirements {
			binds[id] = r.Binds
		}
	}
	if len(binds) < 200 {
		t.Fatalf("the vendored index holds %d ids, want all of them (217)", len(binds))
	}
	doc, err := os.ReadFile("../docs/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := testDocs(t)
	rowRE := regexp.MustCompile(`^\| ([A-Z]+-\d+) \|`)
	seen := map[string]bool{}
	counts := map[string]int{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := m[1]
		cols := strings.Split(line, "|")
		if len(cols) != 7 {
			t.Errorf("%s: %d columns, want id, section, status, tests, note", id, len(cols)-2)
			continue
		}
		status, tests, note := strings.TrimSpace(cols[3]), strings.TrimSpace(cols[4]), strings.TrimSpace(cols[5])
		switch {
		case seen[id]:
			t.Errorf("%s has two rows", id)
		case binds[id] == "":
			t.Errorf("%s is not an id of the vendored index", id)
		case binds[id] != "sdk":
			t.Errorf("%s binds %q, not an SDK", id, binds[id])
		}
		seen[id] = true
		switch status {
		case "n/a":
			counts["n/a"]++
			if tests != "—" || note == "" {
				t.Errorf("%s: an n/a row names no test (—) and says why", id)
			}
			continue
		case "tested", "partial: fixture revision not vendored":
			counts[strings.SplitN(status, ":", 2)[0]]++
		default:
			t.Errorf("%s: status %q, want tested, partial: fixture revision not vendored, or n/a", id, status)
			continue
		}
		idRE := regexp.MustCompile(`\b` + regexp.QuoteMeta(id) + `\b`)
		names := strings.Split(tests, ",")
		if tests == "" || tests == "—" {
			t.Errorf("%s is %s but names no test", id, status)
			continue
		}
		for _, name := range names {
			name = strings.TrimSpace(name)
			defs, ok := docs[name]
			if !ok {
				t.Errorf("%s names %s, which no _test.go file defines", id, name)
				continue
			}
			cited := false
			for _, d := range defs {
				cited = cited || idRE.MatchString(d)
			}
			if !cited {
				t.Errorf("%s names %s, whose doc comment does not cite %s", id, name, id)
			}
		}
	}
	for id, b := range binds {
		if b == "sdk" && !seen[id] {
			t.Errorf("%s binds an SDK and has no row", id)
		}
	}
	countRE := regexp.MustCompile(`Counts: (\d+) ids bind an SDK; (\d+) bind cachekit-go: (\d+) tested, (\d+) partial; (\d+) n/a\.`)
	m := countRE.FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatal("docs/conformance.md states no counts")
	}
	want := []int{len(seen), counts["tested"] + counts["partial"], counts["tested"], counts["partial"], counts["n/a"]}
	for i, w := range want {
		if got, _ := strconv.Atoi(m[i+1]); got != w {
			t.Errorf("stated counts %q, the table's are %v", m[0], want)
			break
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(readme)), " ")
	if line := strconv.Itoa(want[1]) + " of them binding cachekit-go (" + strconv.Itoa(want[2]) + " tested, " + strconv.Itoa(want[3]) + " partial"; !strings.Contains(flat, line) {
		t.Errorf("README.md does not state the table's counts (%q)", line)
	}
	// The sdks.json record: the fixture sums are the vendored files'.
	block := regexp.MustCompile("(?s)```json\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/conformance.md has no sdks.json record")
	}
	var rec map[string]struct {
		Commit   string            `json:"commit"`
		Fixtures map[string]string `json:"fixtures"`
	}
	if err := json.Unmarshal(block[1], &rec); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../testdata/protocol")
	if err != nil {
		t.Fatal(err)
	}
	fixtures := rec["cachekit-go"].Fixtures
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join("../testdata/protocol", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if fixtures[e.Name()] != hex.EncodeToString(sum[:]) {
			t.Errorf("the record's sha256 of %s is %q, the file's %x", e.Name(), fixtures[e.Name()], sum)
		}
	}
	if n != len(fixtures) || len(rec["cachekit-go"].Commit) != 40 {
		t.Errorf("the record lists %d fixtures (of %d vendored) and commit %q", len(fixtures), n, rec["cachekit-go"].Commit)
	}
}

// TestEveryWritePathSeals: with encryption configured, every write path of
// the Client stores ciphertext (PRE-31, PRE-32): Set, SetWithTTL, MSet,
// MSetWithTTL, SetIfAbsent, SetIfPresent, GetOrLoad's and MGetOrLoad's
// stores, and InteropSet on an interop Client. Each entry Redis holds
// carries no plaintext, opens with the keyring under the AAD of tenant,
// full key, "msgpack" and the container's compressed flag (ENC-10), and L1
// holds exactly those sealed bytes, never the value (PRE-10, PRE-11).
// Each entry is sealed under the registry token msgpack (ENC-5).
func TestEveryWritePathSeals(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	const marker = "plaintext-marker-7a3f"
	m, err := encryption.NewManager(*encConfig("acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, opts := range map[string]Options{
		"envelope": {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, KeyPrefix: "env:"},
		"plain":    {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, KeyPrefix: "plain:", DisableCompression: true},
		"interop":  {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, Interop: true},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			c := newClient(t, opts)
			key := func(op string) string {
				k, err := InteropKey("seal", op, name)
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			type write struct {
				what, op string
				fn       func(k string) error
			}
			writes := []write{
				{"Set", "set", func(k string) error { return c.Set(bg, k, marker) }},
				{"SetWithTTL", "setttl", func(k string) error { return c.SetWithTTL(bg, k, marker, time.Minute) }},
				{"MSet", "mset", func(k string) error { return c.MSet(bg, map[string]any{k: marker}) }},
				{"MSetWithTTL", "msetttl", func(k string) error { return c.MSetWithTTL(bg, map[string]any{k: marker}, time.Minute) }},
				{"SetIfAbsent", "nx", func(k string) error { _, err := c.SetIfAbsent(bg, k, marker, time.Minute); return err }},
				{"SetIfPresent", "xx", func(k string) error {
					if err := c.Set(bg, k, "before"); err != nil {
						return err
					}
					_, err := c.SetIfPresent(bg, k, marker, time.Minute)
					return err
				}},
				{"GetOrLoad", "load", func(k string) error {
					_, err := GetOrLoad(bg, c, k, func(context.Context) (string, error) { return marker, nil })
					return err
				}},
				{"MGetOrLoad", "mload", func(k string) error {
					_, err := MGetOrLoad(bg, c, []string{k}, func(_ context.Context, missing []string) (map[string]string, error) {
						return map[string]string{missing[0]: marker}, nil
					})
					return err
				}},
			}
			if opts.Interop {
				writes = append(writes, write{"InteropSet", "interopset", func(string) error {
					return c.InteropSet(bg, "seal", "interopset", []any{name}, marker, time.Minute)
				}})
			}
			compressed := !opts.DisableCompression && !opts.Interop
			for _, w := range writes {
				what, k := w.what, key(w.op)
				if err := w.fn(k); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				full := opts.KeyPrefix + k
				stored, err := rdb.Get(bg, full).Bytes()
				if err != nil {
					t.Fatalf("%s: nothing stored under its key: %v", what, err)
				}
				if bytes.Contains(stored, []byte(marker)) {
					t.Fatalf("%s stored plaintext", what)
				}
				aad, _ := protocol.AppendAAD(nil, "acme", full, protocol.FormatMsgpack, compressed)
				if _, err := m.Decrypt(bg, nil, stored, aad); err != nil {
					t.Fatalf("%s: the stored entry does not open under its AAD: %v", what, err)
				}
				if held, ok := c.l1.Get(k); ok && !bytes.Equal(held, stored) {
					t.Fatalf("%s: L1 holds other bytes than the sealed entry", what)
				}
			}
		})
	}
}

// TestMasterKeyInputVectorsThroughSecure drives encryption.json's
// master_key_input rows through the secure preset itself, as its argument
// and through CACHEKIT_MASTER_KEY: each accept row's hex string is taken
// (PRE-16, PRE-22), its bytes are hex_decode(string) (PRE-17, PRE-18) and
// the Client reads the row's sealed interop entry under the default tenant
// (PRE-25); each reject row, shorter or malformed, fails construction with
// ErrConfig (PRE-23) and no echo of the key; each raw reject row is refused
// by the raw-bytes entry point, encryption.Config.MasterKey, which takes
// exactly 32 bytes and reads the accept rows (PRE-26).
// Secure("") falls back to CACHEKIT_MASTER_KEY (PRE-19).
func TestMasterKeyInputVectorsThroughSecure(t *testing.T) {
	// Not parallel: t.Setenv.
	_, rdb := withRedis(t)
	var f struct {
		In struct {
			Accept []struct {
				Name          string `json:"name"`
				MasterKeyHex  string `json:"master_key_hex"`
				PlaintextHex  string `json:"plaintext_hex"`
				CiphertextHex string `json:"ciphertext_hex"`
				CacheKey      string `json:"cache_key"`
			} `json:"accept_vectors"`
			Reject []struct {
				Name         string `json:"name"`
				MasterKeyHex string `json:"master_key_hex"`
			} `json:"reject_vectors"`
			RawReject []struct {
				Name      string `json:"name"`
				RawKeyHex string `json:"raw_key_hex"`
			} `json:"raw_reject_vectors"`
		} `json:"master_key_input"`
	}
	vectors.Decode(t, "encryption.json", &f)
	if len(f.In.Accept) == 0 || len(f.In.Reject) == 0 || len(f.In.RawReject) == 0 {
		t.Fatal("master_key_input has an empty group")
	}
	t.Setenv(PreviousMasterKeysEnv, "")
	t.Setenv(NameKeyEnv, "")
	for _, row := range f.In.Accept {
		t.Run(row.Name, func(t *testing.T) {
			t.Setenv(MasterKeyEnv, row.MasterKeyHex)
			want, err := protocol.DecodeMsgpack(vectors.Hex(t, row.PlaintextHex), protocol.DefaultDecodeLimits)
			if err != nil {
				t.Fatal(err)
			}
			plant(t, rdb, row.CacheKey, vectors.Hex(t, row.CiphertextHex))
			for how, arg := range map[string]string{"argument": row.MasterKeyHex, "environment": ""} {
				o, err := Secure(arg)
				if err != nil {
					t.Fatalf("Secure by %s refused an accept row: %v", how, err)
				}
				if !bytes.Equal(o.Encryption.MasterKey, vectors.Hex(t, row.MasterKeyHex)) {
					t.Fatalf("Secure by %s holds other key bytes than hex_decode(string)", how)
				}
				o.Redis, o.Interop, o.SWR, o.Invalidation = rdb, true, nil, nil
				c := newClient(t, o)
				var got any
				if err := c.Get(bg, row.CacheKey, &got); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("Secure by %s reads %#v, %v; want %#v", how, got, err, want)
				}
			}
			raw := newClient(t, Options{Redis: rdb, Interop: true, Encryption: &encryption.Config{MasterKey: vectors.Hex(t, row.MasterKeyHex)}})
			var got any
			if err := raw.Get(bg, row.CacheKey, &got); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("raw key reads %#v, %v", got, err)
			}
		})
	}
	for _, row := range f.In.Reject {
		t.Run(row.Name, func(t *testing.T) {
			t.Setenv(MasterKeyEnv, row.MasterKeyHex)
			for how, arg := range map[string]string{"argument": row.MasterKeyHex, "environment": ""} {
				if row.MasterKeyHex == "" && how == "argument" {
					continue // "" is the environment's spelling
				}
				_, err := Secure(arg)
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Secure by %s: %v, want ErrConfig", how, err)
				}
				if len(row.MasterKeyHex) >= 8 && strings.Contains(err.Error(), row.MasterKeyHex) {
					t.Fatalf("the error repeats the key: %v", err)
				}
			}
		})
	}
	for _, row := range f.In.RawReject {
		t.Run(row.Name, func(t *testing.T) {
			_, err := New(Options{L1MaxBytes: 1, Encryption: &encryption.Config{MasterKey: vectors.Hex(t, row.RawKeyHex)}})
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("raw key of %d bytes: %v, want ErrConfig", len(row.RawKeyHex)/2, err)
			}
		})
	}
}

// libraryEnvReads parses every non-test Go file of the library (the
// module's public packages, cmd/, bench/ and examples/ aside, and every
// package of the module they import: what a user's binary links, and not
// the test harnesses) and returns the arguments of its environment reads
// (os.Getenv, os.LookupEnv) as written, and the names of the other
// environment calls it makes (os.Environ, os.ExpandEnv, syscall.Getenv),
// which no library code may make.
func libraryEnvReads(t *testing.T) (reads []string, other []string) {
	t.Helper()
	list := func(args ...string) []string {
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = ".."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	var public []string
	for _, p := range list("./...") {
		rel := strings.TrimPrefix(p, "github.com/cachekit-io/cachekit-go")
		if !strings.Contains(rel+"/", "/internal/") && !strings.HasPrefix(rel, "/cmd/") && !strings.HasPrefix(rel, "/examples/") {
			public = append(public, p)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, d := range list(append([]string{"-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}"}, public...)...) {
		if strings.HasPrefix(d, root+string(filepath.Separator)) || d == root {
			dirs = append(dirs, d)
		}
	}
	if len(public) < 5 || len(dirs) <= len(public) {
		t.Fatalf("library packages %v, directories %v: the scan would miss the library", public, dirs)
	}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			reads, other = envCalls(t, fset, path, reads, other)
		}
	}
	return reads, other
}

// envCalls appends to reads and other the environment calls of the file
// at path (libraryEnvReads).
func envCalls(t *testing.T, fset *token.FileSet, path string, reads, other []string) ([]string, []string) {
	t.Helper()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || (pkg.Name != "os" && pkg.Name != "syscall") {
			return true
		}
		switch sel.Sel.Name {
		case "Getenv", "LookupEnv":
			if pkg.Name == "os" && len(call.Args) == 1 {
				if id, ok := call.Args[0].(*ast.Ident); ok {
					reads = append(reads, id.Name)
					return true
				}
			}
			other = append(other, path+": "+pkg.Name+"."+sel.Sel.Name+" with a computed name")
		case "Environ", "ExpandEnv", "Expand", "Setenv", "Unsetenv", "Clearenv":
			other = append(other, path+": "+pkg.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return reads, other
}

// TestLibraryReadsOnlyKeyVariables: the library reads the environment in
// one place, the Secure preset, and only its key sources:
// CACHEKIT_MASTER_KEY, CACHEKIT_PREVIOUS_MASTER_KEYS and CACHEKIT_NAME_KEY,
// by the constants that name them. So no constructor reads a variable that
// changes encryption activation (PRE-53, PRE-35: Secure("") is the
// from-environment companion), and there is no process-wide default-TTL
// override in the environment (PRE-3).
// Encryption is thus activated only by explicit intent (PRE-30).
func TestLibraryReadsOnlyKeyVariables(t *testing.T) {
	t.Parallel()
	reads, other := libraryEnvReads(t)
	allowed := map[string]bool{"MasterKeyEnv": true, "PreviousMasterKeysEnv": true, "NameKeyEnv": true}
	for _, r := range reads {
		if !allowed[r] {
			t.Errorf("the library reads the environment variable %s", r)
		}
	}
	for _, o := range other {
		t.Errorf("the library touches the environment: %s", o)
	}
	if len(reads) != 3 {
		t.Fatalf("found %d environment reads %v, want the Secure preset's three (the scan is broken if it finds none)", len(reads), reads)
	}
	if MasterKeyEnv != "CACHEKIT_MASTER_KEY" || PreviousMasterKeysEnv != "CACHEKIT_PREVIOUS_MASTER_KEYS" || NameKeyEnv != "CACHEKIT_NAME_KEY" {
		t.Fatal("the key variables' names changed")
	}
}

// TestNoProcessWideDefaultTTL: no environment variable and no global
// setting changes a preset's default TTL (PRE-3): with
// CACHEKIT_DEFAULT_TTL (the reserved name) and look-alikes set, Minimal,
// Production and Secure keep 300, 600 and 600 s, a Client built from
// Minimal stores an entry for 300 s in Redis, and no library package
// exports a variable of type time.Duration a program could set.
func TestNoProcessWideDefaultTTL(t *testing.T) {
	// Not parallel: t.Setenv.
	for _, name := range []string{"CACHEKIT_DEFAULT_TTL", "CACHEKIT_TTL", "CACHEKIT_DEFAULT_TTL_SECONDS"} {
		t.Setenv(name, "5")
	}
	secure, err := Secure(strings.Repeat("42", 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		o   Options
		ttl time.Duration
	}{"minimal": {Minimal(), 300 * time.Second}, "production": {Production(), 600 * time.Second}, "secure": {secure, 600 * time.Second}} {
		if want.o.DefaultTTL != want.ttl {
			t.Errorf("%s: DefaultTTL %v with CACHEKIT_DEFAULT_TTL set, want %v", name, want.o.DefaultTTL, want.ttl)
		}
	}
	srv := redistest.Start(t)
	o := Minimal()
	o.RedisURL = srv.URL()
	c := newClient(t, o)
	mustSet(t, c, "k", "v")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	if ttl := rdb.PTTL(bg, "k").Val(); ttl < 299*time.Second || ttl > 300*time.Second {
		t.Fatalf("stored for %v, want Minimal's 300 s", ttl)
	}
	// No exported package-level time.Duration variable in a library package.
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../protocol", "../encryption", "../l1", "../l2"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if sel, ok := vs.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Duration" {
						for _, n := range vs.Names {
							if n.IsExported() {
								t.Errorf("%s exports the settable duration %s", path, n.Name)
							}
						}
					}
				}
			}
		}
	}
}

// TestMasterKeyEnvActivatesNoPreset: with CACHEKIT_MASTER_KEY and
// CACHEKIT_PREVIOUS_MASTER_KEYS set, no preset's encryption state changes
// (PRE-34, PRE-35), and the bytes each stores in Redis show it: Minimal,
// Production, a custom Options and interop mode store plaintext (an
// envelope that opens to the value, or the value's msgpack); an explicit
// encryption choice is honoured whatever the environment holds (PRE-36):
// Secure with a key argument seals under that key, not the variable's, and
// Secure("") (the companion that takes the key from the environment, PRE-19)
// seals under the variable's.
// Only explicit intent activates encryption (PRE-30), and the companion
// reads no activation variable (PRE-53).
func TestMasterKeyEnvActivatesNoPreset(t *testing.T) {
	// Not parallel: t.Setenv.
	envHex, argHex := strings.Repeat("e1", 32), strings.Repeat("a2", 32)
	t.Setenv(MasterKeyEnv, envHex)
	t.Setenv(PreviousMasterKeysEnv, strings.Repeat("b3", 32))
	t.Setenv(NameKeyEnv, "")
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	explicit, err := Secure(argHex)
	if err != nil {
		t.Fatal(err)
	}
	fromEnv, err := Secure("")
	if err != nil {
		t.Fatal(err)
	}
	value := append([]byte{0xa5}, "hello"...) // the msgpack of "hello"
	for name, tc := range map[string]struct {
		o      Options
		keyHex string // "" for plaintext
	}{
		"minimal":      {Minimal(), ""},
		"production":   {Production(), ""},
		"custom":       {Options{}, ""},
		"interop":      {Options{Interop: true}, ""},
		"secure(arg)":  {explicit, argHex},
		"secure(env)":  {fromEnv, envHex},
		"nocompressed": {Options{DisableCompression: true}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := tc.o
			o.Redis, o.SWR, o.Invalidation = rdb, nil, nil
			c := newClient(t, o)
			if c.Encrypted() != (tc.keyHex != "") || (tc.o.Encryption != nil) != (tc.keyHex != "") {
				t.Fatalf("Encrypted() = %v, Options.Encryption set %v; want %v", c.Encrypted(), tc.o.Encryption != nil, tc.keyHex != "")
			}
			key, err := InteropKey("pre34", "probe", name)
			if err != nil {
				t.Fatal(err)
			}
			mustSet(t, c, key, "hello")
			stored, err := rdb.Get(bg, key).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			compressed := !o.DisableCompression && !o.Interop
			body := stored
			if tc.keyHex != "" {
				mk, _ := encryption.ParseMasterKeyHex(tc.keyHex)
				m, err := encryption.NewManager(encryption.Config{MasterKey: mk})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				aad, _ := protocol.AppendAAD(nil, m.Tenant(), key, protocol.FormatMsgpack, compressed)
				if body, err = m.Decrypt(bg, nil, stored, aad); err != nil {
					t.Fatalf("the stored bytes do not open under the key the preset was given: %v", err)
				}
			}
			if compressed {
				if body, err = protocol.OpenEnvelope(nil, body); err != nil {
					t.Fatalf("stored bytes are not %s: %v", map[bool]string{true: "a sealed envelope", false: "a plaintext envelope"}[tc.keyHex != ""], err)
				}
			}
			if !bytes.Equal(body, value) {
				t.Fatalf("stored payload %x, want the plaintext msgpack %x", body, value)
			}
		})
	}
}

// TestChecksumlessContainerDocumented: cachekit-go's container without a
// checksum is documented as such (PRE-12): with DisableCompression the
// stored bytes are the value's msgpack and nothing else (no checksum), and
// Options.DisableCompression's doc and docs/presets.md say so.
func TestChecksumlessContainerDocumented(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{DisableCompression: true})
	mustSet(t, c, "plain", "hello")
	if b, _ := rdb.Get(bg, "plain").Bytes(); !bytes.Equal(b, append([]byte{0xa5}, "hello"...)) {
		t.Fatalf("DisableCompression stored %x, want the bare msgpack", b)
	}
	src, err := os.ReadFile("options.go")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte("\n\tDisableCompression bool"))
	if i < 0 || !bytes.Contains(src[max(0, i-1200):i], []byte("no checksum")) {
		t.Fatal("Options.DisableCompression's doc does not say the container has no checksum")
	}
	presets, err := os.ReadFile("../docs/presets.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(presets, []byte("Integrity in cachekit-go (PRE-12)")) || !bytes.Contains(presets, []byte("**no checksum**")) {
		t.Fatal("docs/presets.md does not document the checksum-less container")
	}
}

// TestPresetSurface: the package's presets are exactly minimal, production
// and secure (Preset constants and the exported functions that return
// Options), so the encrypted preset has one name, secure, and no
// `encrypted` alias (PRE-15); each preset's doc comment says what happens
// when Redis is unreachable (PRE-14); and the documentation recommends a
// master key of exactly 32 bytes, the only length every SDK accepts
// (PRE-24).
func TestPresetSurface(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	presets := map[string]string{}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Type.Results == nil {
			continue
		}
		if id, ok := fd.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == "Options" {
			presets[fd.Name.Name] = fd.Doc.Text()
		}
	}
	if len(presets) != 3 || presets["Minimal"] == "" || presets["Production"] == "" || presets["Secure"] == "" {
		t.Fatalf("preset constructors %v, want exactly Minimal, Production and Secure", presets)
	}
	for name, doc := range presets {
		if !strings.Contains(doc, "unreachable Redis") && !strings.Contains(doc, "Redis is unreachable") {
			t.Errorf("%s's doc does not say what happens when Redis is unreachable", name)
		}
	}
	for _, p := range []Preset{PresetCustom, PresetMinimal, PresetProduction, PresetSecure} {
		if p != "" && p != "minimal" && p != "production" && p != "secure" {
			t.Errorf("preset name %q", p)
		}
	}
	for _, doc := range []string{"../README.md", "../encryption/doc.go", "../docs/presets.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("exactly 32 bytes")) && !bytes.Contains(b, []byte("exactly **32 bytes")) {
			t.Errorf("%s does not recommend a master key of exactly 32 bytes", doc)
		}
	}
}

// TestExplicitOptionBeatsPreset: a field set on a preset's Options wins
// over the preset's default (PRE-48): Production with DefaultTTL 42 s
// stores entries for 42 s, and with L1MaxBytes 0 runs without L1.
// An explicit TTL wins over the preset's default (PRE-2).
func TestExplicitOptionBeatsPreset(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	o := Production()
	o.Redis, o.SWR, o.Invalidation = rdb, nil, nil
	o.DefaultTTL, o.L1MaxBytes = 42*time.Second, 0
	c := newClient(t, o)
	mustSet(t, c, "k", "v")
	if ttl := rdb.PTTL(bg, "k").Val(); ttl <= 41*time.Second || ttl > 42*time.Second {
		t.Fatalf("stored for %v, want the explicit 42 s", ttl)
	}
	if c.l1 != nil {
		t.Fatal("L1 is on although L1MaxBytes was set to 0")
	}
}
