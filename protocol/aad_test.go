package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// aadRow is any vector row carrying an aad_hex, wherever it sits in a file.
type aadRow struct {
	path         string
	tenant       string
	cacheKey     string
	format       string
	compressed   bool
	originalType *string
	aadHex       string
}

// collectAADRows walks a decoded vector file and returns every object that
// has an aad_hex field, with the tenant_id in force at that point (a row's
// own, else the nearest enclosing object's).
func collectAADRows(t *testing.T, v any, path, tenant string, out *[]aadRow) {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x["tenant_id"].(string); ok {
			tenant = s
		}
		if h, ok := x["aad_hex"].(string); ok {
			r := aadRow{path: path, tenant: tenant, aadHex: h}
			var ok1, ok2, ok3 bool
			r.cacheKey, ok1 = x["cache_key"].(string)
			r.format, ok2 = x["format"].(string)
			r.compressed, ok3 = x["compressed"].(bool)
			if !ok1 || !ok2 || !ok3 || tenant == "" {
				t.Fatalf("%s: aad row lacks tenant, cache_key, format or compressed", path)
			}
			if ot, ok := x["original_type"].(string); ok {
				r.originalType = &ot
			}
			if name, ok := x["name"].(string); ok {
				r.path = path + ":" + name
			}
			*out = append(*out, r)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			collectAADRows(t, x[k], path+"/"+k, tenant, out)
		}
	case []any:
		for i, e := range x {
			collectAADRows(t, e, fmt.Sprintf("%s[%d]", path, i), tenant, out)
		}
	}
}

// TestAADVectors: every aad_hex row of encryption.json and interop-mode.json
// is the AAD this package builds from the row's tenant, key, format and
// compressed flag, the compressed token spelled exactly True or False
// (ENC-6).
func TestAADVectors(t *testing.T) {
	// interop-mode.json's aad_vectors group must exist and be non-empty; the
	// walk below then covers it together with every other aad_hex row.
	_ = vectors.Group[map[string]any](t, "interop-mode.json", "aad_vectors")
	for _, file := range []string{"encryption.json", "interop-mode.json"} {
		t.Run(file, func(t *testing.T) {
			var top any
			vectors.Decode(t, file, &top)
			var rows []aadRow
			collectAADRows(t, top, "", "", &rows)
			if len(rows) == 0 {
				t.Fatalf("%s yields zero aad rows", file)
			}
			t.Logf("%s: %d aad rows", file, len(rows))
			for _, r := range rows {
				t.Run(strings.TrimPrefix(r.path, "/"), func(t *testing.T) {
					want := vectors.Hex(t, r.aadHex)
					var got []byte
					var err error
					if r.originalType != nil {
						got, err = AppendAADWithType(nil, r.tenant, r.cacheKey, r.format, r.compressed, *r.originalType)
					} else {
						got, err = AppendAAD(nil, r.tenant, r.cacheKey, r.format, r.compressed)
						if n := AADLen(r.tenant, r.cacheKey, r.format, r.compressed); n != len(want) {
							t.Fatalf("AADLen %d, want %d", n, len(want))
						}
					}
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("err %v\n got %x\nwant %x", err, got, want)
					}
				})
			}
		})
	}
}

func TestAADLayout(t *testing.T) {
	got, err := AppendAAD([]byte{0xee}, "t", "k", FormatArrow, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "ee" + "03" + "0000000174" + "000000016b" + "000000056172726f77" + "0000000454727565"
	if hex.EncodeToString(got) != want {
		t.Fatalf("got %x\nwant %s", got, want)
	}
	got, _ = AppendAAD(nil, "t", "k", FormatOrjson, false)
	if !bytes.HasSuffix(got, []byte("\x00\x00\x00\x05False")) {
		t.Fatalf("compressed=false token wrong: %x", got)
	}
	five, _ := AppendAADWithType(nil, "t", "k", FormatMsgpack, false, "numpy")
	four, _ := AppendAAD(nil, "t", "k", FormatMsgpack, false)
	if !bytes.Equal(five, append(four, "\x00\x00\x00\x05numpy"...)) {
		t.Fatalf("five-component form is not four components plus the type")
	}
	// Multi-byte UTF-8 is length-prefixed in bytes, not characters.
	got, _ = AppendAAD(nil, "t", "clé", FormatMsgpack, false)
	if !bytes.Contains(got, []byte("\x00\x00\x00\x04cl\xc3\xa9")) {
		t.Fatalf("UTF-8 key length wrong: %x", got)
	}
}

func TestAADRejects(t *testing.T) {
	long := "SECRET" + strings.Repeat("k", MaxAADSize)
	cases := []struct {
		name                     string
		tenant, key, format, typ string
		cause                    error
	}{
		{"empty tenant", "", "kSECRET", FormatMsgpack, "", ErrMalformed},
		{"empty key", "tSECRET", "", FormatMsgpack, "", ErrMalformed},
		{"unknown format", "tSECRET", "kSECRET", "json", "", ErrMalformed},
		{"uppercase format", "tSECRET", "kSECRET", "MSGPACK", "", ErrMalformed},
		{"empty format", "tSECRET", "kSECRET", "", "", ErrMalformed},
		{"invalid utf-8 tenant", "tSECRET\xff", "kSECRET", FormatMsgpack, "", ErrMalformed},
		{"invalid utf-8 key", "tSECRET", "kSECRET\xc3", FormatMsgpack, "", ErrMalformed},
		{"key over cap", "tSECRET", long, FormatMsgpack, "", ErrTooLarge},
		{"total over cap", "tSECRET", long[:MaxAADSize-25], FormatMsgpack, "", ErrTooLarge},
		{"invalid utf-8 type", "tSECRET", "kSECRET", FormatMsgpack, "\xff", ErrMalformed},
		{"type pushes over cap", "tSECRET", long[:MaxAADSize-40], FormatMsgpack, strings.Repeat("x", 30), ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := []byte("keep")
			var got []byte
			var err error
			if c.typ != "" {
				got, err = AppendAADWithType(dst, c.tenant, c.key, c.format, false, c.typ)
			} else {
				got, err = AppendAAD(dst, c.tenant, c.key, c.format, false)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Op != "aad" || !errors.Is(err, c.cause) {
				t.Fatalf("got %v, want aad error wrapping %v", err, c.cause)
			}
			if string(got) != "keep" {
				t.Fatalf("dst changed on error")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error quotes an input: %v", err)
			}
		})
	}
	if _, err := AppendAADWithType(nil, "tSECRET", "kSECRET", FormatMsgpack, false, ""); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty original type accepted: %v", err)
	}
	// Exactly at the cap is accepted.
	key := long[:MaxAADSize-AADLen("tSECRET", "", FormatMsgpack, false)]
	if got, err := AppendAAD(nil, "tSECRET", key, FormatMsgpack, false); err != nil || len(got) != MaxAADSize {
		t.Fatalf("AAD of exactly MaxAADSize: len %d, err %v", len(got), err)
	}
}

func TestAppendAADAllocs(t *testing.T) {
	tenant, key := "cross-sdk-test", "users:get_user:61598716255080080f6456eb065c2e51badfaa4320b0efe97469c29cffee8875"
	dst := make([]byte, 0, AADLen(tenant, key, FormatMsgpack, true)+16)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := AppendAAD(dst, tenant, key, FormatMsgpack, true); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendAADWithType(dst, tenant, key, FormatMsgpack, true, "msgpack"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AppendAAD allocated %v times into a sized dst", allocs)
	}
}

func BenchmarkAppendAAD(b *testing.B) {
	tenant, key := "cross-sdk-test", "users:get_user:61598716255080080f6456eb065c2e51badfaa4320b0efe97469c29cffee8875"
	n := AADLen(tenant, key, FormatMsgpack, true)
	dst := make([]byte, 0, n)
	b.ReportAllocs()
	b.SetBytes(int64(n))
	for b.Loop() {
		if _, err := AppendAAD(dst, tenant, key, FormatMsgpack, true); err != nil {
			b.Fatal(err)
		}
	}
}
