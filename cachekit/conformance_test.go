package cachekit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
