package cachekit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
)

// TestReliabilityDefaultsMatchDocs pins every documented default of
// Reliability: the "Default: X." sentence of each field's doc comment must
// be what the guard's WithDefaults gives a zero Reliability.
func TestReliabilityDefaultsMatchDocs(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	def := reflect.ValueOf(guard.Config{}.WithDefaults())
	re := regexp.MustCompile(`Default: ([^ .(]+)`)
	checked := 0
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Reliability" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			doc := strings.Join(strings.Fields(field.Doc.Text()), " ")
			m := re.FindStringSubmatch(doc)
			if m == nil {
				t.Errorf("field %s documents no default", field.Names[0].Name)
				continue
			}
			got := fmt.Sprint(def.FieldByName(field.Names[0].Name).Interface())
			if got != m[1] {
				t.Errorf("%s: doc says default %s, withDefaults gives %s", field.Names[0].Name, m[1], got)
			}
			checked++
		}
		return false
	})
	if checked < 10 {
		t.Fatalf("checked %d fields", checked)
	}
}
