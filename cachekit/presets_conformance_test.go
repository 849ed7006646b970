package cachekit

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// libraryEnvReads parses every non-test Go file of the library (the module
// without cmd/, bench/ and examples/) and returns the arguments of its
// environment reads (os.Getenv, os.LookupEnv) as written, and the names of
// the other environment calls it makes (os.Environ, os.ExpandEnv,
// syscall.Getenv), which no library code may make.
func libraryEnvReads(t *testing.T) (reads []string, other []string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "cmd", "bench", "examples", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
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
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
