package protocol_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// ckFuzzArgs turns fuzz text into arguments: a JSON array is converted as the
// vectors are; anything else (invalid JSON included) is one string argument,
// so invalid UTF-8 reaches the normalizer too.
func ckFuzzArgs(text string) []any {
	v, err := ckFromJSON([]byte(text))
	if list, ok := v.([]any); err == nil && ok {
		return list
	}
	if err == nil {
		return []any{v}
	}
	return []any{text}
}

// ckFuzzKwargs is ckFuzzArgs for named arguments: a JSON object, or the text
// as the name of one argument.
func ckFuzzKwargs(text string) map[string]any {
	v, err := ckFromJSON([]byte(text))
	if m, ok := v.(map[string]any); err == nil && ok {
		return m
	}
	return map[string]any{text: v}
}

// FuzzGenerateKey seeds from every vector row that carries a string
// serializer identity and checks, for any input: no panic; either a
// *FormatError of op cache-key and no key, or a valid UTF-8 key of at most
// MaxKeyLength characters with no space, LF or CR, reproduced exactly by a
// second call, carrying ArgsHash's digest and the serializer's code whenever
// it was not shortened.
func FuzzGenerateKey(f *testing.F) {
	seeds := 0
	for _, group := range []string{"vectors", "error_vectors", "serializer_object_vectors"} {
		for _, row := range vectors.Group[ckVectorRow](f, ckVectorFile, group) {
			var serializer string
			switch {
			case row.SerializerClass != "":
				serializer = "<custom>:" + row.SerializerClass
			case json.Unmarshal(row.SerializerType, &serializer) != nil:
				continue // null or a number: not representable as a Go string identity
			}
			ns := ""
			if row.Namespace != nil {
				ns = *row.Namespace
			}
			f.Add(ns, row.FunctionModule, row.FunctionQualname, string(row.Args), string(row.Kwargs),
				row.IntegrityChecking, serializer)
			seeds++
		}
	}
	if seeds == 0 {
		f.Fatal("no seeds from " + ckVectorFile)
	}
	f.Fuzz(func(t *testing.T, ns, module, function, args, kwargs string, ic bool, serializer string) {
		spec := protocol.KeySpec{
			Namespace: ns, Module: module, Function: function,
			Args: ckFuzzArgs(args), Kwargs: ckFuzzKwargs(kwargs),
			IntegrityCheck: ic, Serializer: serializer,
		}
		key, err := protocol.GenerateKey(spec)
		if err != nil {
			var fe *protocol.FormatError
			if !errors.As(err, &fe) || fe.Op != "cache-key" || key != "" {
				t.Fatalf("error %T %q with key of %d bytes", err, err, len(key))
			}
			return
		}
		if !utf8.ValidString(key) {
			t.Fatal("key is not valid UTF-8")
		}
		if n := utf8.RuneCountInString(key); n > protocol.MaxKeyLength {
			t.Fatalf("key is %d characters", n)
		}
		if strings.ContainsAny(key, " \n\r") {
			t.Fatal("key keeps a space, LF or CR")
		}
		again, err := protocol.GenerateKey(spec)
		if err != nil || again != key {
			t.Fatalf("second call differs (err %v)", err)
		}
		sum, err := protocol.ArgsHash(spec.Args, spec.Kwargs)
		if err != nil {
			t.Fatalf("GenerateKey accepted arguments ArgsHash refuses: %v", err)
		}
		code, err := protocol.SerializerCode(serializer)
		if err != nil {
			t.Fatalf("GenerateKey accepted a serializer SerializerCode refuses: %v", err)
		}
		flag := "0"
		if ic {
			flag = "1"
		}
		full := "func:" + module + "." + function + ":args:" + hex.EncodeToString(sum[:]) + ":" + flag + code
		if ns != "" {
			full = "ns:" + ns + ":" + full
		}
		full = strings.NewReplacer(" ", "_", "\n", "_", "\r", "_").Replace(full)
		if utf8.RuneCountInString(full) <= protocol.MaxKeyLength {
			if key != full {
				t.Fatal("key differs from its plain assembly")
			}
		} else if runes := []rune(key); len(runes) != 83 || string(runes[:50]) != string([]rune(full)[:50]) || runes[50] != ':' {
			t.Fatal("over-long key not in its shortened form")
		}
	})
}
