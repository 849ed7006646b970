package protocol

import (
	"bytes"
	"errors"
	"testing"
)

func TestAppendAADKeyEqualsJoinedKey(t *testing.T) {
	cases := []struct{ prefix, key string }{
		{"", "k"}, {"app:", "user:42"}, {"ñ:", "ключ"}, {"p", ""}, {"prefix:", "x"},
	}
	for _, c := range cases {
		for _, compressed := range []bool{true, false} {
			want, werr := AppendAAD(nil, "tenant", c.prefix+c.key, FormatMsgpack, compressed)
			got, gerr := AppendAADKey(nil, "tenant", c.prefix, c.key, FormatMsgpack, compressed)
			if (werr == nil) != (gerr == nil) || !bytes.Equal(want, got) {
				t.Errorf("prefix %q key %q: got %x (%v), want %x (%v)", c.prefix, c.key, got, gerr, want, werr)
			}
		}
	}
	if _, err := AppendAADKey(nil, "t", "", "", FormatMsgpack, true); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty joined key: %v", err)
	}
	if _, err := AppendAADKey(nil, "t", "p:", "\xff", FormatMsgpack, true); !errors.Is(err, ErrMalformed) {
		t.Errorf("invalid UTF-8 key part: %v", err)
	}
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		_, _ = AppendAADKey(dst, "default", "app:", "user:42", FormatMsgpack, true)
	}); n != 0 {
		t.Errorf("AppendAADKey allocated %.0f times into a sized dst", n)
	}
}
