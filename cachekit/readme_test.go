package cachekit

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's quickstart must be the body of Example (which runs with
// `// Output:` in go test), so the snippet users copy compiles and works.
func TestReadmeQuickstartMatchesExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- quickstart:start.*?```go\n(.*?)```\n<!-- quickstart:end -->").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no quickstart block between the markers")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)\nfunc Example\(\) \{\n(.*?)\t// Output:`).FindSubmatch(src)
	if body == nil {
		t.Fatal("example_test.go has no Example function with output")
	}
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if got, want := norm(string(m[1])), norm(string(body[1])); got != want {
		t.Fatalf("README quickstart differs from Example:\nREADME:\n%s\n\nExample:\n%s", got, want)
	}
}
