package depcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// loadWing lists cachekit's files a load passes through: GetOrLoad's and
// MGetOrLoad's flights, the claims, the landing path and SWR's refresh.
var loadWing = []string{"loader.go", "lease.go", "landing.go", "mloader.go", "swr.go"}

// flightValue is the comment that must stand on the line of the load
// wing's one allowed any: the flight's value (one flight serves callers of
// different V).
const flightValue = "the flight's value"

// cachekitFiles parses cachekit's non-test files, with comments.
func cachekitFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "cachekit")
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string]*ast.File)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(name)] = f
	}
	for _, name := range loadWing {
		if files[name] == nil {
			t.Fatalf("the load wing's %s is gone: update loadWing", name)
		}
	}
	return fset, files
}

// isAny reports whether e is the type any (or interface{}).
func isAny(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "any"
	case *ast.InterfaceType:
		return e.Methods == nil || len(e.Methods.List) == 0
	}
	return false
}

// TestLoadWingIsTyped: loaded values travel typed. In the load wing no
// function returns an any, no struct has a field of type any, no map holds
// anys, and the one any left (the flight's value) says so on its line;
// type parameters' constraints aside.
func TestLoadWingIsTyped(t *testing.T) {
	fset, files := cachekitFiles(t)
	for _, name := range loadWing {
		f := files[name]
		said := make(map[int]bool) // lines whose comment names the flight's value
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if strings.Contains(c.Text, flightValue) {
					said[fset.Position(c.Pos()).Line] = true
				}
			}
		}
		constraints := make(map[ast.Expr]bool)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncType:
				if n.TypeParams != nil {
					for _, p := range n.TypeParams.List {
						constraints[p.Type] = true
					}
				}
				if n.Results != nil {
					for _, r := range n.Results.List {
						if isAny(r.Type) {
							t.Errorf("%s: a function returns an any", fset.Position(r.Pos()))
						}
					}
				}
			case *ast.TypeSpec:
				if n.TypeParams != nil {
					for _, p := range n.TypeParams.List {
						constraints[p.Type] = true
					}
				}
			case *ast.StructType:
				for _, fl := range n.Fields.List {
					if isAny(fl.Type) {
						t.Errorf("%s: a struct field of type any", fset.Position(fl.Pos()))
					}
				}
			case *ast.MapType:
				if isAny(n.Value) {
					t.Errorf("%s: a map of anys", fset.Position(n.Pos()))
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok || !isAny(e) || constraints[e] {
				return true
			}
			if pos := fset.Position(e.Pos()); !said[pos.Line] {
				t.Errorf("%s: an any that is not the flight's value (say %q on its line if it is)", pos, flightValue)
			}
			return true
		})
	}
}

// funcOf returns the name of the top-level function of f enclosing pos
// ("" outside any).
func funcOf(f *ast.File, pos token.Pos) string {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= pos && pos < fd.End() {
			return fd.Name.Name
		}
	}
	return ""
}

// uses calls fn with every identifier name in files (a selector's name
// among them), with its file and enclosing top-level function.
func uses(files map[string]*ast.File, name string, fn func(file, fun string, pos token.Pos)) {
	for file, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == name {
				fn(file, funcOf(f, id.Pos()), id.Pos())
			}
			return true
		})
	}
}

// TestOneLoaderStep: a loader runs in one step (loadStep, and loadMany for
// a batch), and a load's result, the cached "not found" among them, is
// made in one function (result; fromFlight reads another type's): every
// mode shares them.
func TestOneLoaderStep(t *testing.T) {
	fset, files := cachekitFiles(t)
	uses(files, "runLoader", func(file, fun string, pos token.Pos) {
		if fun != "loadStep" && fun != "loadMany" && fun != "runLoader" {
			t.Errorf("%s: runLoader called in %s, not the loader step (loadStep, loadMany)", fset.Position(pos), fun)
		}
	})
	for file, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			typ := cl.Type
			if ix, isIndex := typ.(*ast.IndexExpr); isIndex {
				typ = ix.X
			}
			if id, isIdent := typ.(*ast.Ident); isIdent && id.Name == "loaded" && len(cl.Elts) > 0 {
				if fun := funcOf(f, cl.Pos()); fun != "result" {
					t.Errorf("%s: a load's result made in %s (%s), not by result", fset.Position(cl.Pos()), fun, file)
				}
			}
			return true
		})
		// A cached "not found" is set only where results are made, and
		// where a flight's result of another type is read (fromFlight).
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				if sel, isSel := lhs.(*ast.SelectorExpr); isSel && sel.Sel.Name == "gone" {
					if fun := funcOf(f, as.Pos()); fun != "result" && fun != "fromFlight" {
						t.Errorf("%s: a load's absence set in %s (%s), not by result", fset.Position(as.Pos()), fun, file)
					}
				}
			}
			return true
		})
	}
}

// TestEntryKindsInEntryGo: entry.go alone decides an entry's kind and
// seals or opens it. Only entry.go (and client.go, which hands l2's probe
// to L1's config) names l2.IsNegative or l2.NegativeMagic, only entry.go
// calls AES-GCM (EncryptNow, DecryptNow, DecryptNowInfo), and
// sealNegative and openNegative are entry.go's.
func TestEntryKindsInEntryGo(t *testing.T) {
	fset, files := cachekitFiles(t)
	allowed := map[string]map[string]bool{
		"IsNegative":     {"entry.go": true, "client.go": true},
		"NegativeMagic":  {"entry.go": true},
		"NegativeLen":    {"entry.go": true},
		"EncryptNow":     {"entry.go": true},
		"DecryptNow":     {"entry.go": true},
		"DecryptNowInfo": {"entry.go": true},
	}
	for file, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if ok, listed := allowed[sel.Sel.Name]; listed && !ok[file] {
				t.Errorf("%s: %s outside entry.go", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		for _, d := range f.Decls {
			if fd, isFunc := d.(*ast.FuncDecl); isFunc && file != "entry.go" &&
				(fd.Name.Name == "sealNegative" || fd.Name.Name == "openNegative") {
				t.Errorf("%s: %s defined outside entry.go", fset.Position(fd.Pos()), fd.Name.Name)
			}
		}
	}
}
