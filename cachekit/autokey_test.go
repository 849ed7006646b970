package cachekit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// TestAutoKeyVectors: every cache-keys.json row that AutoKey's settings
// describe (the default serializer, no named arguments) passes through it
// to the expected key.
func TestAutoKeyVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "protocol", "cache-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Name        string          `json:"name"`
			Namespace   *string         `json:"namespace"`
			Module      string          `json:"function_module"`
			Qualname    string          `json:"function_qualname"`
			Args        json.RawMessage `json:"args"`
			Kwargs      map[string]any  `json:"kwargs"`
			Integrity   bool            `json:"integrity_checking"`
			Serializer  json.RawMessage `json:"serializer_type"`
			ExpectedKey string          `json:"expected_key"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	// JSON numbers as a Python caller's json.loads has them: integers stay
	// integers, numbers with a fraction or exponent are floats.
	var convert func(v any) any
	convert = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i
			}
			f, _ := x.Float64()
			return f
		case []any:
			for i := range x {
				x[i] = convert(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = convert(x[k])
			}
		}
		return v
	}
	decode := func(raw json.RawMessage) []any {
		var v []any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return convert(v).([]any)
	}
	n := 0
	for _, row := range file.Vectors {
		var ser string
		_ = json.Unmarshal(row.Serializer, &ser)
		if len(row.Kwargs) > 0 || !row.Integrity || (ser != "std" && ser != "default") {
			continue
		}
		ns := ""
		if row.Namespace != nil {
			ns = *row.Namespace
		}
		args := decode(row.Args)
		got, err := AutoKey(ns, row.Module+"."+row.Qualname, args...)
		if err != nil || got != row.ExpectedKey {
			t.Errorf("%s: AutoKey = %q, %v; want %q", row.Name, got, err, row.ExpectedKey)
		}
		n++
	}
	if n < 9 {
		t.Fatalf("only %d rows were eligible; the vector file changed?", n)
	}
	t.Logf("%d cache-keys.json rows through AutoKey", n)
	for _, bad := range []string{"", "noDot", ".name", "module."} {
		if _, err := AutoKey("ns", bad); !errors.Is(err, protocol.ErrInvalidKey) {
			t.Errorf("AutoKey(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	if _, err := AutoKey("ns", "pkg.F", make(chan int)); !errors.Is(err, protocol.ErrUnsupported) {
		t.Errorf("AutoKey with a chan argument = %v, want ErrUnsupported", err)
	}
}
