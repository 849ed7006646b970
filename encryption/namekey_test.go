package encryption

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

var testNameKey = bytes.Repeat([]byte{0x17}, KeySize)

// Config.NameKey is validated only: its size, a placeholder, the master
// key repeated, and NameKeyFromProvider's rules.
func TestNameKeyConfig(t *testing.T) {
	provider := func(context.Context) (Keys, error) { return Keys{}, errors.New("unused") }
	master := func() []byte { return vectors.Hex(t, testKeyHex) }
	for name, cfg := range map[string]Config{
		"short":                 {MasterKey: master(), NameKey: make([]byte, 31)},
		"zero":                  {MasterKey: master(), NameKey: make([]byte, KeySize)},
		"master":                {MasterKey: master(), NameKey: master()},
		"fromProvider/noProv":   {MasterKey: master(), NameKeyFromProvider: true},
		"fromProvider/withName": {Provider: provider, NameKey: testNameKey, NameKeyFromProvider: true},
	} {
		var ce *ConfigError
		if _, err := NewManager(cfg); !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, "NameKey") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewManager(Config{MasterKey: master(), NameKey: testNameKey}); err != nil {
		t.Errorf("a good name key: %v", err)
	}
	if k, err := ParseNameKeyHex(strings.Repeat("17", KeySize)); err != nil || !bytes.Equal(k, testNameKey) {
		t.Errorf("ParseNameKeyHex: %x, %v", k, err)
	}
	var ce *ConfigError
	if _, err := ParseNameKeyHex("zz"); !errors.As(err, &ce) || ce.Field != "NameKey" || strings.Contains(err.Error(), "zz") {
		t.Errorf("ParseNameKeyHex of a bad key: %v", err)
	}
}

// A provider's Keys.NameKey: required with NameKeyFromProvider, refused
// without it, validated, handed out as a copy, zeroed where the provider
// gave it, and dropped by Close.
func TestProviderNameKey(t *testing.T) {
	cases := map[string]struct {
		fromProvider bool
		nameKey      func() []byte
		ok           bool
	}{
		"supplied":         {true, func() []byte { return bytes.Clone(testNameKey) }, true},
		"missing":          {true, func() []byte { return nil }, false},
		"not asked for":    {false, func() []byte { return bytes.Clone(testNameKey) }, false},
		"equals current":   {true, func() []byte { return vectors.Hex(t, testKeyHex) }, false},
		"zero":             {true, func() []byte { return make([]byte, KeySize) }, false},
		"none, not needed": {false, func() []byte { return nil }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var handed []byte
			m, err := NewManager(Config{NameKeyFromProvider: tc.fromProvider, Provider: func(context.Context) (Keys, error) {
				handed = tc.nameKey()
				return Keys{Current: vectors.Hex(t, testKeyHex), NameKey: handed}, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			err = m.Warm(context.Background())
			var ce *ConfigError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Warm: %v", err)
			case !tc.ok && (!errors.As(err, &ce) || ce.Field != "Keys.NameKey"):
				t.Fatalf("Warm: %v, want a Keys.NameKey ConfigError", err)
			}
			if handed != nil && !isZero(handed) {
				t.Error("the provider's name key was not zeroed")
			}
			got := m.NameKey()
			if want := tc.ok && tc.fromProvider; want != bytes.Equal(got, testNameKey) {
				t.Errorf("NameKey() = %x", got)
			}
			_ = m.Close()
			if m.NameKey() != nil {
				t.Error("NameKey after Close")
			}
		})
	}
}
