package main

import (
	"strings"
	"testing"
)

// roundTripValues are JSON inputs and the exact line get must print for
// them: keys sorted, integers exact at every int64/uint64 boundary, floats
// kept floats, bytes as $bytes, unicode untouched.
var roundTripValues = []struct{ name, in, out string }{
	{"uint64_max", `18446744073709551615`, `18446744073709551615`},
	{"int64_min", `-9223372036854775808`, `-9223372036854775808`},
	{"int64_max", `9223372036854775807`, `9223372036854775807`},
	{"beyond_float53", `9007199254740993`, `9007199254740993`},
	{"negative_small", `-5`, `-5`},
	{"float_integral", `2.0`, `2.0`},
	{"float_fraction", `3.14`, `3.14`},
	{"float_exponent", `1e300`, `1e+300`},
	{"bytes", `{"$bytes":"00ff10deadbeef"}`, `{"$bytes":"00ff10deadbeef"}`},
	{"empty_bytes", `{"$bytes":""}`, `{"$bytes":""}`},
	{"unicode_string", `"héllo wörld ✓ 🔑"`, `"héllo wörld ✓ 🔑"`},
	{"escapes", `"a\"b\\c\n<&>"`, `"a\"b\\c\n<&>"`},
	{"null", `null`, `null`},
	{"bools", `[true,false]`, `[true,false]`},
	{"nested", `{"z":{"b":[1,{"$bytes":"01"}],"a":null},"a":-1,"ü":"ö"}`,
		`{"a":-1,"z":{"a":null,"b":[1,{"$bytes":"01"}]},"ü":"ö"}`},
	{"large_ints_in_map", `{"max":18446744073709551615,"min":-9223372036854775808}`,
		`{"max":18446744073709551615,"min":-9223372036854775808}`},
}

// modes are the flag sets a round trip runs under. Interop keys must be
// interop/v1 keys, so those modes take their key from `cachekit key`.
var modes = []struct {
	name    string
	flags   []string
	interop bool
}{
	{"plain", nil, false},
	{"no_compression", []string{"--no-compression"}, false},
	{"secure", []string{"--secure", "--tenant", "テナント-ü"}, false},
	{"secure_prefix", []string{"--secure", "--prefix", "app:ключ:"}, false},
	{"interop", []string{"--interop"}, true},
	{"interop_secure", []string{"--interop", "--secure", "--tenant", "租户"}, true},
}

func TestRoundTrip(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, v := range roundTripValues {
				t.Run(v.name, func(t *testing.T) {
					key := "ключ:🔑:" + m.name + ":" + v.name
					if m.interop {
						key = tool(t, nil, "key", "--namespace", "cli", "--operation", m.name,
							"--args", `["ключ 🔑","`+v.name+`"]`).want(t, exitOK).line()
					}
					// Flags after the positional arguments, as people type them.
					set := append([]string{"set", key, v.in, "--ttl", "5m"}, m.flags...)
					tool(t, env, set...).want(t, exitOK)
					got := tool(t, env, append([]string{"get", key}, m.flags...)...).want(t, exitOK)
					if got.line() != v.out {
						t.Fatalf("get printed %s, want %s", got.line(), v.out)
					}
					// Flags before the command and the arguments give the same.
					again := tool(t, env, append(append([]string{}, m.flags...), "get", key)...).want(t, exitOK)
					if again.line() != v.out {
						t.Fatalf("flags-first get printed %s, want %s", again.line(), v.out)
					}
					tool(t, env, append([]string{"inspect", key}, m.flags...)...).want(t, exitOK)
				})
			}
		})
	}
}

func TestSetFromStdinAndDashKeys(t *testing.T) {
	s := newStack(t)
	toolStdin(t, s.env, `{"big":18446744073709551615}`, "set", "stdin:1", "-").want(t, exitOK)
	if got := tool(t, s.env, "get", "stdin:1").want(t, exitOK).line(); got != `{"big":18446744073709551615}` {
		t.Fatalf("got %s", got)
	}
	tool(t, s.env, "set", "--", "-dash-key", "-7").want(t, exitOK)
	if got := tool(t, s.env, "get", "--", "-dash-key").want(t, exitOK).line(); got != "-7" {
		t.Fatalf("got %s", got)
	}
	if b := s.raw(t, "-dash-key"); len(b) == 0 {
		t.Fatal("the dash key was not stored under its own name")
	}
}

func TestDelExistsTTL(t *testing.T) {
	s := newStack(t)
	tool(t, s.env, "set", "k", `1`, "--ttl", "90s").want(t, exitOK)
	ttl := tool(t, s.env, "ttl", "k").want(t, exitOK).line()
	if ttl != "1m30s" && ttl != "1m29s" {
		t.Fatalf("ttl printed %q", ttl)
	}
	if out := tool(t, s.env, "exists", "k").want(t, exitOK).line(); out != "true" {
		t.Fatalf("exists printed %q", out)
	}
	tool(t, s.env, "del", "k").want(t, exitOK)
	if out := tool(t, s.env, "exists", "k").want(t, exitNotFound).line(); out != "false" {
		t.Fatalf("exists printed %q", out)
	}
	tool(t, s.env, "del", "k").want(t, exitNotFound)
	tool(t, s.env, "ttl", "k").want(t, exitNotFound)
	// A key Redis keeps forever (not written by CacheKit) reports "none".
	s.put(t, "forever", []byte{0x01})
	if err := s.rdb.Persist(t.Context(), "forever").Err(); err != nil {
		t.Fatal(err)
	}
	if out := tool(t, s.env, "ttl", "forever").want(t, exitOK).line(); out != "none" {
		t.Fatalf("ttl printed %q", out)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	s := newStack(t)
	const secretValue = "s3cr3t-value-ABCDEF"
	env := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	tool(t, env, "set", "acct:1", `"`+secretValue+`"`, "--secure").want(t, exitOK)
	// inspect --secure prints the value by design; only key material is banned there.
	mustNotLeak(t, tool(t, env, "inspect", "acct:1", "--secure").want(t, exitOK))
	runs := [][]string{
		{"inspect", "acct:1"},
		{"inspect", "acct:1", "--secure", "--tenant", "other"},
		{"get", "acct:1"},
		{"get", "acct:1", "--secure", "--tenant", "other"},
		{"set", "acct:2", `{"v":"` + secretValue + `"`, "--secure"},
		{"get", "acct:1", "--secure", "--redis", "redis://127.0.0.1:1/0"},
	}
	for _, args := range runs {
		r := tool(t, env, args...)
		mustNotLeak(t, r, secretValue)
	}
	// A malformed key variable is reported by shape, never echoed.
	bad := strings.Repeat("Zz", 32)
	r := tool(t, s.with("CACHEKIT_MASTER_KEY="+bad), "get", "acct:1", "--secure").want(t, exitUsage)
	mustNotLeak(t, r, bad)
}
