package protocol_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// ckVectorFile is the vendored auto-mode key vector file.
const ckVectorFile = "cache-keys.json"

// ckVectorRow is one row of any cache-keys.json group; each group uses the
// fields it needs.
type ckVectorRow struct {
	Name              string          `json:"name"`
	Namespace         *string         `json:"namespace"`
	FunctionModule    string          `json:"function_module"`
	FunctionQualname  string          `json:"function_qualname"`
	Args              json.RawMessage `json:"args"`
	Kwargs            json.RawMessage `json:"kwargs"`
	IntegrityChecking bool            `json:"integrity_checking"`
	SerializerType    json.RawMessage `json:"serializer_type"`
	SerializerClass   string          `json:"serializer_class"`
	DefinedBy         string          `json:"defined_by"`
	ExpectedKey       string          `json:"expected_key"`
	Error             string          `json:"error"`
}

// ckFromJSON converts a JSON document to the Go values a Python caller's
// json.loads would hand the reference generator: integers stay integers
// (int64, then uint64, then *big.Int), numbers written with a fraction or an
// exponent become float64, objects map[string]any, arrays []any.
func ckFromJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	return ckConvertJSON(v)
}

func ckConvertJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			return strconv.ParseFloat(s, 64)
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("bad JSON integer %q", s)
		}
		return n, nil
	case []any, map[string]any:
		out, _, err := protocol.MapJSONContainer(v, ckConvertJSON)
		return out, err
	}
	return v, nil // nil, bool, string
}

// ckRowSpec builds the KeySpec of a row, except its serializer.
func ckRowSpec(t *testing.T, row ckVectorRow) protocol.KeySpec {
	t.Helper()
	spec := protocol.KeySpec{
		Module:         row.FunctionModule,
		Function:       row.FunctionQualname,
		IntegrityCheck: row.IntegrityChecking,
	}
	if row.Namespace != nil {
		spec.Namespace = *row.Namespace
	}
	args, err := ckFromJSON(row.Args)
	if err != nil {
		t.Fatalf("args: %v", err)
	}
	list, ok := args.([]any)
	if !ok {
		t.Fatalf("args is %T, want a JSON array", args)
	}
	spec.Args = list
	kwargs, err := ckFromJSON(row.Kwargs)
	if err != nil {
		t.Fatalf("kwargs: %v", err)
	}
	named, ok := kwargs.(map[string]any)
	if !ok {
		t.Fatalf("kwargs is %T, want a JSON object", kwargs)
	}
	spec.Kwargs = named
	return spec
}

// ckKeyFor is the path a cache takes from its configured serializer (a name
// or a serializer value) to a key.
func ckKeyFor(spec protocol.KeySpec, serializer any) (string, error) {
	id, err := protocol.SerializerIdentity(serializer)
	if err != nil {
		return "", err
	}
	spec.Serializer = id
	return protocol.GenerateKey(spec)
}

// ckArgsSegment returns the hex digest between "args:" and the next colon.
func ckArgsSegment(t *testing.T, key string) string {
	t.Helper()
	_, rest, ok := strings.Cut(key, ":args:")
	if !ok {
		t.Fatalf("key has no args segment")
	}
	seg, _, _ := strings.Cut(rest, ":")
	return seg
}

func TestCacheKeyVectorFileMetadata(t *testing.T) {
	var meta struct {
		Version       string `json:"version"`
		KeyFormat     string `json:"key_format"`
		HashAlgorithm string `json:"hash_algorithm"`
	}
	vectors.Decode(t, ckVectorFile, &meta)
	if meta.Version != "1.3.0" {
		t.Errorf("version %q: re-read the spec before accepting a new fixture", meta.Version)
	}
	if !strings.HasPrefix(meta.KeyFormat, "ns:{namespace}:func:{module}.{qualname}:args:{blake2b_256_hex}:{ic_flag}{serializer_code}") {
		t.Errorf("key_format changed: %q", meta.KeyFormat)
	}
	if meta.HashAlgorithm != "blake2b-256 of msgpack([normalized_args, sorted_kwargs])" {
		t.Errorf("hash_algorithm changed: %q", meta.HashAlgorithm)
	}
}

func TestCacheKeyVectors(t *testing.T) {
	rows := vectors.Group[ckVectorRow](t, ckVectorFile, "vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			spec := ckRowSpec(t, row)
			var serializer string
			if err := json.Unmarshal(row.SerializerType, &serializer); err != nil {
				t.Fatalf("serializer_type is not a string: %v", err)
			}
			got, err := ckKeyFor(spec, serializer)
			if err != nil {
				t.Fatalf("GenerateKey: %v", err)
			}
			if got != row.ExpectedKey {
				t.Fatalf("key\n got %s\nwant %s", got, row.ExpectedKey)
			}
			sum, err := protocol.ArgsHash(spec.Args, spec.Kwargs)
			if err != nil {
				t.Fatalf("ArgsHash: %v", err)
			}
			if h := hex.EncodeToString(sum[:]); h != ckArgsSegment(t, row.ExpectedKey) {
				t.Fatalf("ArgsHash %s disagrees with the key's args segment", h)
			}
		})
	}
}

func TestCacheKeyErrorVectors(t *testing.T) {
	rows := vectors.Group[ckVectorRow](t, ckVectorFile, "error_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			if row.Error == "" {
				t.Fatal("error row without an error description")
			}
			spec := ckRowSpec(t, row)
			serializer, err := ckFromJSON(row.SerializerType)
			if err != nil {
				t.Fatalf("serializer_type: %v", err)
			}
			key, err := ckKeyFor(spec, serializer)
			if err == nil {
				t.Fatalf("serializer %T accepted; got a key of %d characters", serializer, len(key))
			}
			ckAssertFormatErr(t, err, protocol.ErrInvalidKey)
			if s, ok := serializer.(string); ok {
				spec.Serializer = s
				if _, err := protocol.GenerateKey(spec); !errors.Is(err, protocol.ErrInvalidKey) {
					t.Fatalf("GenerateKey with the string identity: err = %v, want ErrInvalidKey", err)
				}
			}
		})
	}
}

// Stand-ins for the serializer classes the object vectors name. The Go SDK
// has no ArrowSerializer, OrjsonSerializer or AutoSerializer (cachekit-py's
// classes); a Go value of a defined type with the same bare name reduces to
// the same "<custom>:" identity, so each row still checks its code.
type (
	ArrowSerializer    struct{}
	StandardSerializer struct{ level int }
	OrjsonSerializer   struct{}
	AutoSerializer     struct{}
	auto               struct{}
)

var ckSerializerObjects = map[string]any{
	"ArrowSerializer":    ArrowSerializer{},
	"StandardSerializer": &StandardSerializer{level: 1},
	"OrjsonSerializer":   &OrjsonSerializer{},
	"AutoSerializer":     AutoSerializer{},
	"auto":               auto{},
}

func TestCacheKeySerializerObjectVectors(t *testing.T) {
	rows := vectors.Group[ckVectorRow](t, ckVectorFile, "serializer_object_vectors")
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			if row.DefinedBy != "sdk" && row.DefinedBy != "test" {
				t.Fatalf("defined_by %q", row.DefinedBy)
			}
			obj, ok := ckSerializerObjects[row.SerializerClass]
			if !ok {
				t.Fatalf("no Go stand-in for serializer class %q: add one", row.SerializerClass)
			}
			spec := ckRowSpec(t, row)
			got, err := ckKeyFor(spec, obj)
			if err != nil {
				t.Fatalf("key: %v", err)
			}
			if got != row.ExpectedKey {
				t.Fatalf("key\n got %s\nwant %s", got, row.ExpectedKey)
			}
			// The object never takes the code its class name would as a string.
			byName, err := ckKeyFor(spec, row.SerializerClass)
			if err != nil {
				t.Fatalf("key by name: %v", err)
			}
			if byName == got {
				t.Fatalf("object and name %q share a key", row.SerializerClass)
			}
		})
	}
}

// ckAssertFormatErr checks err is a *FormatError of op "cache-key" wrapping
// want, with the package prefix.
func ckAssertFormatErr(t *testing.T, err, want error) {
	t.Helper()
	var fe *protocol.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %T is not a *protocol.FormatError", err)
	}
	if fe.Op != "cache-key" {
		t.Fatalf("Op = %q, want cache-key", fe.Op)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q does not wrap %v", err, want)
	}
	if !strings.HasPrefix(err.Error(), "protocol: cache-key: ") {
		t.Fatalf("error %q lacks the package prefix", err)
	}
}
