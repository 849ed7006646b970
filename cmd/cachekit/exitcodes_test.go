package main

import (
	"strings"
	"testing"
)

// TestExitCodes runs every exit code the tool documents, from the
// situations that produce it.
// A current key repeated among the previous keys is refused at load (ENC-9).
func TestExitCodes(t *testing.T) {
	s := newStack(t)
	sec := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	toolBin(t, sec, "set", "acct:1", `{"n":1}`, "--secure", "--tenant", "acme").want(t, exitOK)
	toolBin(t, s.env, "set", "plain:1", `{"n":1}`).want(t, exitOK)

	t.Run("0_ok", func(t *testing.T) {
		toolBin(t, sec, "get", "acct:1", "--secure", "--tenant", "acme").want(t, exitOK)
		toolBin(t, nil, "keygen").want(t, exitOK)
		// The key variable alone never turns encryption on.
		toolBin(t, sec, "get", "plain:1").want(t, exitOK)
		toolBin(t, nil, "key", "--namespace", "users", "--operation", "get_user", "--args", "[42]").want(t, exitOK)
	})

	t.Run("1_not_found", func(t *testing.T) {
		for _, args := range [][]string{
			{"get", "missing"}, {"get", "missing", "--secure"}, {"inspect", "missing"},
			{"del", "missing"}, {"exists", "missing"}, {"ttl", "missing"},
			{"get", "acct:1", "--prefix", "other:"},
		} {
			toolBin(t, sec, args...).want(t, exitNotFound)
		}
	})

	t.Run("2_usage", func(t *testing.T) {
		cases := []struct {
			name string
			env  []string
			args []string
		}{
			{"no_command", nil, nil},
			{"unknown_command", nil, []string{"frobnicate"}},
			{"missing_key", nil, []string{"get"}},
			{"extra_arg", nil, []string{"get", "a", "b"}},
			{"unknown_flag", nil, []string{"get", "a", "--bogus"}},
			{"flag_without_value", nil, []string{"get", "a", "--redis"}},
			{"bad_json", nil, []string{"set", "a", `{"a":`}},
			{"trailing_json", nil, []string{"set", "a", `1 2`}},
			{"int_above_uint64", nil, []string{"set", "a", `18446744073709551616`}},
			{"int_below_int64", nil, []string{"set", "a", `-9223372036854775809`}},
			{"float_overflow", nil, []string{"set", "a", `1e999`}},
			{"bad_bytes_hex", nil, []string{"set", "a", `{"$bytes":"zz"}`}},
			{"unsupported_tag", nil, []string{"set", "a", `{"$uuid":"550e8400-e29b-41d4-a716-446655440000"}`}},
			{"ttl_zero", nil, []string{"set", "a", "1", "--ttl", "0s"}},
			{"ttl_too_long", nil, []string{"set", "a", "1", "--ttl", "721h"}},
			{"secure_without_key", nil, []string{"get", "acct:1", "--secure"}},
			{"malformed_key", []string{"CACHEKIT_MASTER_KEY=nothex"}, []string{"get", "plain:1", "--secure"}},
			{"short_key", []string{"CACHEKIT_MASTER_KEY=" + testKeyHex[:62]}, []string{"get", "acct:1", "--secure"}},
			{"bad_previous_key", []string{"CACHEKIT_MASTER_KEY=" + testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS=" + oldKeyHex + ",xyz"}, []string{"get", "acct:1", "--secure"}},
			{"previous_repeats_current", []string{"CACHEKIT_MASTER_KEY=" + testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS=" + testKeyHex}, []string{"get", "acct:1", "--secure"}},
			{"bad_redis_url", nil, []string{"get", "a", "--redis", "http://example.invalid/"}},
			{"interop_with_prefix", nil, []string{"get", "a", "--interop", "--prefix", "p:"}},
			{"interop_bad_key", nil, []string{"set", "not-an-interop-key", "1", "--interop"}},
			{"key_missing_namespace", nil, []string{"key", "--operation", "op"}},
			{"key_args_not_array", nil, []string{"key", "--namespace", "n", "--operation", "op", "--args", `{"a":1}`}},
			{"key_reserved_namespace", nil, []string{"key", "--namespace", "ns", "--operation", "op"}},
			{"keygen_with_arg", nil, []string{"keygen", "x"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				toolBin(t, append(s.with(), c.env...), c.args...).want(t, exitUsage)
			})
		}
	})

	t.Run("3_integrity", func(t *testing.T) {
		// Tampered: one bit of the ciphertext flipped.
		b := s.raw(t, "acct:1")
		b[len(b)/2] ^= 0x01
		s.put(t, "acct:tampered", b)
		r := toolBin(t, sec, "get", "acct:tampered", "--secure", "--tenant", "acme").want(t, exitIntegrity)
		if !strings.Contains(r.stderr, "does not authenticate") {
			t.Fatalf("stderr %q does not say the entry failed to authenticate", r.stderr)
		}
		// Wrong key, wrong tenant, moved to another key, read without --secure.
		wrongKey := s.with("CACHEKIT_MASTER_KEY=" + otherKeyHex)
		toolBin(t, wrongKey, "get", "acct:1", "--secure", "--tenant", "acme").want(t, exitIntegrity)
		toolBin(t, sec, "get", "acct:1", "--secure", "--tenant", "other").want(t, exitIntegrity)
		toolBin(t, sec, "get", "acct:1", "--secure").want(t, exitIntegrity)
		s.put(t, "acct:moved", s.raw(t, "acct:1"))
		toolBin(t, sec, "get", "acct:moved", "--secure", "--tenant", "acme").want(t, exitIntegrity)
		toolBin(t, sec, "get", "acct:1").want(t, exitIntegrity)
		// A plaintext entry never reads through a --secure reader.
		toolBin(t, sec, "get", "plain:1", "--secure").want(t, exitIntegrity)
		// A value that is not a CacheKit entry at all.
		s.put(t, "foreign:1", []byte("hello"))
		toolBin(t, s.env, "get", "foreign:1").want(t, exitIntegrity)
	})

	t.Run("4_unavailable", func(t *testing.T) {
		dead := newStack(t)
		url := dead.srv.URL()
		dead.srv.Kill()
		env := []string{"CACHEKIT_REDIS_URL=" + url, "CACHEKIT_MASTER_KEY=" + testKeyHex}
		for _, args := range [][]string{
			{"get", "a"}, {"set", "a", "1"}, {"del", "a"}, {"exists", "a"}, {"ttl", "a"},
			{"inspect", "a", "--secure"}, {"get", "a", "--secure", "--interop"},
		} {
			r := toolBin(t, env, args...).want(t, exitUnavailable)
			if !strings.Contains(r.stderr, "redis unavailable") {
				t.Fatalf("%v: stderr %q", args, r.stderr)
			}
		}
	})
}

// TestUsageText checks that -h works for the tool and every command, exits
// 0, prints to stdout and carries examples.
func TestUsageText(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		r := toolBin(t, nil, args...).want(t, exitOK)
		for _, c := range commands {
			if !strings.Contains(r.stdout, "  "+c.name+" ") {
				t.Fatalf("%v: command %s missing from usage", args, c.name)
			}
		}
		if !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "Exit codes:") {
			t.Fatalf("%v: usage lacks examples or exit codes", args)
		}
	}
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "-h"}, {"help", c.name}, {c.name, "x", "--help"}} {
			r := toolBin(t, nil, args...).want(t, exitOK)
			if !strings.HasPrefix(r.stdout, "Usage: cachekit "+c.name) || !strings.Contains(r.stdout, "Examples:\n  cachekit") {
				t.Fatalf("%v: usage text %q", args, r.stdout)
			}
		}
	}
}
