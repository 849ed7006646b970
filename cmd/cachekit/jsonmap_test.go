package main

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

func TestParseNumberBoundaries(t *testing.T) {
	ok := []struct {
		in   string
		want any
	}{
		{"0", int64(0)}, {"-0", int64(0)},
		{"9223372036854775807", int64(math.MaxInt64)},
		{"9223372036854775808", uint64(1) << 63},
		{"18446744073709551615", uint64(math.MaxUint64)},
		{"-9223372036854775808", int64(math.MinInt64)},
		{"9007199254740993", int64(9007199254740993)},
		{"2.0", 2.0}, {"-0.0", math.Copysign(0, -1)}, {"1e3", 1000.0}, {"1E-7", 1e-7},
		{"18446744073709551616.0", 18446744073709551616.0},
	}
	for _, c := range ok {
		got, err := parseNumber(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseNumber(%s) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"18446744073709551616", "-9223372036854775809", "1e999", "-1e999", "99999999999999999999999"} {
		if _, err := parseNumber(in); err == nil {
			t.Errorf("parseNumber(%s) accepted an out-of-range number", in)
		} else if code, _ := classify(err); code != exitUsage {
			t.Errorf("parseNumber(%s): exit %d, want %d", in, code, exitUsage)
		}
	}
}

func TestAppendJSONForms(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "true"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{2.0, "2.0"}, {0.5, "0.5"}, {1e21, "1e+21"}, {1e-7, "1e-07"}, {123456789.0, "123456789.0"},
		{math.NaN(), `{"$float":"NaN"}`}, {math.Inf(1), `{"$float":"+Inf"}`}, {math.Inf(-1), `{"$float":"-Inf"}`},
		{[]byte{0xde, 0xad}, `{"$bytes":"dead"}`}, {[]byte{}, `{"$bytes":""}`},
		{"a\"\\\n\t\x01\x7f<>&\u2028é", `"a\"\\\n\t\u0001\u007f<>&\u2028é"`},
		{"\xff", `"\ufffd"`},
		{map[string]any{"b": int64(1), "a": []any{}}, `{"a":[],"b":1}`},
		{protocol.Map{{Key: int64(1), Value: "x"}, {Key: "k", Value: nil}}, `{"$map":[[1,"x"],["k",null]]}`},
		{protocol.Ext{Type: -1, Data: []byte{1}}, `{"$ext":{"type":-1,"data":"01"}}`},
	}
	for _, c := range cases {
		got := string(appendJSON(nil, c.v))
		if got != c.want {
			t.Errorf("appendJSON(%#v) = %s, want %s", c.v, got, c.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("appendJSON(%#v) = %s is not valid JSON", c.v, got)
		}
	}
}

func TestParseJSONRefusals(t *testing.T) {
	for _, in := range []string{
		``, `{`, `1 2`, `[1]x`, `{"$bytes":1}`, `{"$bytes":"abc"}`, `{"$bytes":"zz"}`,
		`{"$set":[1]}`, `{"$uuid":"x"}`, `{"$datetime":"x"}`, `{"$float":"1"}`, `{"$int":"1"}`,
		`[{"$map":[]}]`, `{"a":{"$ext":{}}}`,
	} {
		_, err := parseJSON(in)
		var xe *exitError
		if !errors.As(err, &xe) || xe.code != exitUsage {
			t.Errorf("parseJSON(%q) = %v, want a usage error", in, err)
		}
	}
	// A map that merely contains "$bytes" among other keys stays a map.
	v, err := parseJSON(`{"$bytes":"00","x":1}`)
	if _, ok := v.(map[string]any); err != nil || !ok {
		t.Errorf("two-key map: %#v, %v", v, err)
	}
}

// roundTrip checks that s survives JSON -> value -> canonical msgpack ->
// decoded value -> JSON -> value unchanged, and that printing is a fixed
// point.
func roundTrip(t *testing.T, s string) {
	v, err := parseJSON(s)
	if err != nil {
		return
	}
	out := appendJSON(nil, v)
	v2, err := parseJSON(string(out))
	if err != nil {
		t.Fatalf("output %s does not parse back: %v", out, err)
	}
	if out2 := appendJSON(nil, v2); string(out2) != string(out) {
		t.Fatalf("printing is not stable: %s then %s", out, out2)
	}
	mp, err := protocol.AppendCanonicalValue(nil, v)
	if err != nil {
		return // e.g. a string that is not valid UTF-8
	}
	dec, err := protocol.DecodeMsgpack(mp, protocol.DefaultDecodeLimits)
	if err != nil {
		t.Fatalf("canonical bytes do not decode: %v", err)
	}
	if got := appendJSON(nil, dec); string(got) != string(out) {
		t.Fatalf("msgpack round trip changed the value: %s -> %s", out, got)
	}
}

// jsonSeeds returns the interop value vectors as plain JSON, plus boundary
// documents.
func jsonSeeds(t testing.TB) []string {
	type row struct {
		Value json.RawMessage `json:"value"`
	}
	var seeds []string
	for _, r := range vectors.Group[row](t, "interop-mode.json", "value_vectors") {
		if s, skip := convert(r.Value); skip == "" {
			seeds = append(seeds, s)
		}
	}
	type krow struct {
		Args json.RawMessage `json:"args"`
	}
	for _, r := range vectors.Group[krow](t, "interop-mode.json", "key_vectors") {
		if s, skip := convert(r.Args); skip == "" {
			seeds = append(seeds, s)
		}
	}
	return append(seeds, `18446744073709551615`, `-9223372036854775808`, `{"$bytes":"00ff"}`, `1e-7`, `[2.0,-0.0]`)
}

func TestJSONRoundTripSeeds(t *testing.T) {
	seeds := jsonSeeds(t)
	for i, s := range seeds {
		t.Run("seed_"+strconv.Itoa(i), func(t *testing.T) { roundTrip(t, s) })
	}
}

func FuzzJSONMapping(f *testing.F) {
	seeds := jsonSeeds(f)
	if len(seeds) == 0 {
		f.Fatal("no fuzz seeds: the vector groups yielded nothing")
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { roundTrip(t, s) })
}

func TestParseInterleaved(t *testing.T) {
	cases := []struct {
		args []string
		pos  []string
		g    globalFlags
	}{
		{[]string{"k", "--secure"}, []string{"k"}, globalFlags{secure: true, tenant: "default"}},
		{[]string{"--secure", "k", "--tenant", "t", "v"}, []string{"k", "v"}, globalFlags{secure: true, tenant: "t"}},
		{[]string{"k", "-5", "--prefix=p:"}, []string{"k", "-5"}, globalFlags{tenant: "default", prefix: "p:"}},
		{[]string{"--prefix", "--", "k"}, []string{"k"}, globalFlags{tenant: "default", prefix: "--"}},
		{[]string{"--", "-k", "--secure"}, []string{"-k", "--secure"}, globalFlags{tenant: "default"}},
		{[]string{"-", "-.5", "--interop"}, []string{"-", "-.5"}, globalFlags{tenant: "default", interop: true}},
	}
	for _, c := range cases {
		var g globalFlags
		fs := newFlagSet("t")
		g.register(fs)
		pos, err := parseInterleaved(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || g != c.g {
			t.Errorf("%q: pos %q, flags %+v, err %v; want %q, %+v", c.args, pos, g, err, c.pos, c.g)
		}
	}
	var g globalFlags
	fs := newFlagSet("t")
	g.register(fs)
	for _, bad := range [][]string{{"--nope"}, {"k", "--redis"}, {"--secure=maybe"}} {
		if _, err := parseInterleaved(fs, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
