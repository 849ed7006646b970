package protocol

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// AADTemplate must append exactly what AppendAADKey appends, and fail
// exactly where it fails, for every tenant, prefix, key, format and flag.

// sameAADError reports whether two AAD errors are the same verdict.
func sameAADError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var fa, fb *FormatError
	return errors.As(a, &fa) && errors.As(b, &fb) && *fa == *fb
}

// checkTemplate compares the template with AppendAADKey for one input set.
// It never prints the inputs: tenants and keys are sensitive.
func checkTemplate(t testing.TB, tenant, prefix, key, format string, compressed bool) {
	t.Helper()
	tpl, terr := NewAADTemplate(tenant, prefix, format, compressed)
	if terr != nil {
		// The template refuses exactly what AppendAADKey refuses for a
		// valid key, with the same error.
		_, want := AppendAADKey(nil, tenant, prefix, "k", format, compressed)
		if !sameAADError(terr, want) {
			t.Fatalf("NewAADTemplate error %v, AppendAADKey %v", terr, want)
		}
		if tpl.front != nil || tpl.tail != nil {
			t.Fatalf("NewAADTemplate returned a non-zero template with an error")
		}
		return
	}
	dst := []byte("keep")
	got, gerr := tpl.Append(dst, key)
	want, werr := AppendAADKey([]byte("keep"), tenant, prefix, key, format, compressed)
	if !sameAADError(gerr, werr) {
		t.Fatalf("Append error %v, AppendAADKey %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Append and AppendAADKey differ (%d vs %d bytes)", len(got), len(want))
	}
	if gerr == nil && tpl.Len(key) != len(got)-len("keep") {
		t.Fatalf("Len %d, appended %d", tpl.Len(key), len(got)-len("keep"))
	}
	if gerr != nil && string(got) != "keep" {
		t.Fatalf("dst changed on error")
	}
}

func TestAADTemplateVectors(t *testing.T) {
	_ = vectors.Group[map[string]any](t, "interop-mode.json", "aad_vectors")
	rows := 0
	for _, file := range []string{"encryption.json", "interop-mode.json"} {
		var top any
		vectors.Decode(t, file, &top)
		var found []aadRow
		collectAADRows(t, top, "", "", &found)
		for _, r := range found {
			if r.originalType != nil {
				continue // the five-component shape has no template
			}
			rows++
			t.Run(file+strings.TrimPrefix(r.path, "/"), func(t *testing.T) {
				want := vectors.Hex(t, r.aadHex)
				tpl, err := NewAADTemplate(r.tenant, "", r.format, r.compressed)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tpl.Append(nil, r.cacheKey)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("err %v, AAD differs from the vector", err)
				}
				// Every split of the key into prefix and key binds the
				// same bytes (or fails as AppendAADKey does when the split
				// cuts a UTF-8 sequence).
				for i := 0; i <= len(r.cacheKey); i++ {
					checkTemplate(t, r.tenant, r.cacheKey[:i], r.cacheKey[i:], r.format, r.compressed)
				}
			})
		}
	}
	if rows == 0 {
		t.Fatal("no four-component aad rows")
	}
}

func TestAADTemplateMatchesAppendAADKey(t *testing.T) {
	long := strings.Repeat("k", MaxAADSize)
	tenants := []string{"default", "t", "ténant", "", "\xff", "t\xc3", long, long + "k"}
	prefixes := []string{"", "app:", "ñ:", "\xff", "p\xe2\x82", long[:100]}
	keys := []string{"k", "user:12345", "ключ", "", "\xff", "k\xf0\x9f\x98", "a\x00b", long[:1000], long, long + "k"}
	formats := []string{FormatMsgpack, FormatOrjson, FormatArrow, "", "json", "MSGPACK"}
	for _, tenant := range tenants {
		for _, prefix := range prefixes {
			for _, key := range keys {
				for _, format := range formats {
					for _, compressed := range []bool{true, false} {
						checkTemplate(t, tenant, prefix, key, format, compressed)
					}
				}
			}
		}
	}
	// The 64 KiB cap on the whole AAD: exactly at it, and one byte over.
	for _, prefix := range []string{"", "app:"} {
		tpl, err := NewAADTemplate("default", prefix, FormatMsgpack, false)
		if err != nil {
			t.Fatal(err)
		}
		room := MaxAADSize - tpl.Len("")
		for _, n := range []int{room - 1, room, room + 1} {
			checkTemplate(t, "default", prefix, long[:n], FormatMsgpack, false)
		}
		if got, err := tpl.Append(nil, long[:room]); err != nil || len(got) != MaxAADSize {
			t.Fatalf("AAD of exactly MaxAADSize: len %d, err %v", len(got), err)
		}
		if _, err := tpl.Append(nil, long[:room+1]); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("AAD one byte over the cap: %v", err)
		}
	}
}

func TestAADTemplateZeroValue(t *testing.T) {
	var tpl AADTemplate
	got, err := tpl.Append([]byte("keep"), "k")
	if !errors.Is(err, ErrMalformed) || string(got) != "keep" {
		t.Fatalf("zero template: %q, %v", got, err)
	}
}

func TestAADTemplateAllocs(t *testing.T) {
	tpl, err := NewAADTemplate("default", "app:", FormatMsgpack, true)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, tpl.Len("user:42"))
	if n := testing.AllocsPerRun(100, func() {
		if _, err := tpl.Append(dst, "user:42"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("AADTemplate.Append allocated %.0f times into a sized dst", n)
	}
}

// TestValidUTF8 holds the ASCII shortcut to utf8.ValidString: every one-
// and two-byte string, one high byte at each position of ASCII strings up
// to 40 bytes, and random strings.
func TestValidUTF8(t *testing.T) {
	check := func(s string) {
		if got, want := validUTF8(s), utf8.ValidString(s); got != want {
			t.Fatalf("validUTF8 %v, utf8.ValidString %v (%d bytes)", got, want, len(s))
		}
	}
	check("")
	for a := range 256 {
		check(string([]byte{byte(a)}))
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	for n := 1; n <= 40; n++ {
		base := []byte(strings.Repeat("a", n))
		check(string(base))
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				s := bytes.Clone(base)
				s[i] = c
				check(string(s))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(4) != 0 {
				b[i] &= 0x7f
			}
		}
		check(string(b))
	}
}

// FuzzAADTemplate compares the template with AppendAADKey, and validUTF8
// with utf8.ValidString, on arbitrary inputs seeded from the AAD vectors.
func FuzzAADTemplate(f *testing.F) {
	var top any
	vectors.Decode(f, "interop-mode.json", &top)
	seeds := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			tenant, _ := x["tenant_id"].(string)
			key, ok := x["cache_key"].(string)
			if _, has := x["aad_hex"]; has && ok {
				if tenant == "" {
					tenant = "default"
				}
				f.Add(tenant, "", key, true)
				f.Add(tenant, key[:len(key)/2], key[len(key)/2:], false)
				seeds += 2
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(top)
	if seeds == 0 {
		f.Fatal("FuzzAADTemplate has no seeds")
	}
	f.Fuzz(func(t *testing.T, tenant, prefix, key string, compressed bool) {
		checkTemplate(t, tenant, prefix, key, FormatMsgpack, compressed)
		for _, s := range []string{tenant, prefix, key} {
			if validUTF8(s) != utf8.ValidString(s) {
				t.Fatalf("validUTF8 disagrees with utf8.ValidString")
			}
		}
	})
}
