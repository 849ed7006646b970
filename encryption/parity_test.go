package encryption

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// nowResult runs a Now call to completion: its own result, or its
// Deferred's.
func nowResult(out []byte, d *Deferred, err error) ([]byte, error) {
	if d != nil {
		if out != nil || err != nil {
			return nil, fmt.Errorf("deferred call also returned out=%v err=%v", out != nil, err)
		}
		return d.Wait(context.Background())
	}
	return out, err
}

// sameError reports how a and b differ in class, message or cause, or "".
func sameError(a, b error) string {
	switch {
	case a == nil || b == nil:
		if a != b {
			return fmt.Sprintf("one path failed and the other did not: %v / %v", a, b)
		}
	case fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b):
		return fmt.Sprintf("classes differ: %T / %T", a, b)
	case a.Error() != b.Error():
		return fmt.Sprintf("messages differ: %q / %q", a, b)
	case fmt.Sprint(errors.Unwrap(a)) != fmt.Sprint(errors.Unwrap(b)):
		return fmt.Sprintf("causes differ: %v / %v", errors.Unwrap(a), errors.Unwrap(b))
	}
	return ""
}

// TestNowAndGeneralPathsFailAlike feeds the same failing input through
// EncryptNow/DecryptNow (waiting on the Deferred when there is one) and
// through Encrypt/Decrypt, and requires identical errors.
func TestNowAndGeneralPathsFailAlike(t *testing.T) {
	ctx := context.Background()
	key := vectors.Hex(t, testKeyHex)
	sealedBy := func(aad string) []byte {
		m := staticManager(t, "parity", testKeyHex)
		s, _, _ := m.EncryptNow(nil, []byte("value"), []byte(aad))
		return s
	}
	good := sealedBy("right")
	static := func() *Manager { return staticManager(t, "parity", testKeyHex) }
	lazy := func(p KeyProvider) func() *Manager {
		return func() *Manager {
			m, err := NewManager(Config{Provider: p, Tenant: "parity"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close() })
			return m
		}
	}
	goodKeys := lazy(func(context.Context) (Keys, error) { return Keys{Current: append([]byte(nil), key...)}, nil })
	closed := func() *Manager { m := static(); _ = m.Close(); return m }
	failing := lazy(func(context.Context) (Keys, error) { return Keys{}, errors.New("vault timeout") })
	badKey := lazy(func(context.Context) (Keys, error) { return Keys{Current: key[:31]}, nil })
	exhausted := func() *Manager { m := static(); m.setNonceForTest(1, counterLimit); return m }

	type op int
	const (
		enc op = iota
		dec
	)
	cases := []struct {
		name   string
		op     op
		mgr    func() *Manager
		in     []byte
		aad    string
		target any // an error value for errors.Is, or a pointer for errors.As
	}{
		{"auth failure", dec, static, good, "wrong", ErrAuthFailed},
		{"auth failure deferred", dec, goodKeys, good, "wrong", ErrAuthFailed},
		{"truncated input", dec, static, good[:Overhead-1], "right", new(*LengthError)},
		{"truncated input deferred", dec, goodKeys, good[:5], "right", new(*LengthError)},
		{"nonce exhaustion", enc, exhausted, []byte("v"), "a", ErrNonceExhausted},
		{"closed encrypt", enc, closed, []byte("v"), "a", ErrClosed},
		{"closed decrypt", dec, closed, good, "right", ErrClosed},
		{"provider failure encrypt", enc, failing, []byte("v"), "a", new(*ProviderError)},
		{"provider failure decrypt", dec, failing, good, "right", new(*ProviderError)},
		{"bad key material encrypt", enc, badKey, []byte("v"), "a", new(*ConfigError)},
		{"bad key material decrypt", dec, badKey, good, "right", new(*ConfigError)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var nowErr, genErr error
			if c.op == enc {
				_, nowErr = nowResult(c.mgr().EncryptNow(nil, c.in, []byte(c.aad)))
				_, genErr = c.mgr().Encrypt(ctx, nil, c.in, []byte(c.aad))
			} else {
				_, nowErr = nowResult(c.mgr().DecryptNow(nil, c.in, []byte(c.aad)))
				_, genErr = c.mgr().Decrypt(ctx, nil, c.in, []byte(c.aad))
			}
			if diff := sameError(nowErr, genErr); diff != "" {
				t.Fatal(diff)
			}
			switch target := c.target.(type) {
			case error:
				if !errors.Is(nowErr, target) {
					t.Fatalf("got %v, want %v", nowErr, target)
				}
			default:
				if !errors.As(nowErr, target) {
					t.Fatalf("got %T %v, want %T", nowErr, nowErr, target)
				}
			}
		})
	}
}
