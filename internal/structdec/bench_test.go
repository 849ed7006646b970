package structdec

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// BenchmarkDecode compares Decode with msgpack.Unmarshal on the fixture,
// into a destination reused across iterations as cachekit's callers reuse
// theirs.
func BenchmarkDecode(b *testing.B) {
	data := encodeCompact(b, sampleRecord())
	b.Run("structdec/Record100B", func(b *testing.B) {
		var dst Record
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if !Decode(data, &dst) {
				b.Fatal("Decode reported false")
			}
		}
	})
	b.Run("msgpack/Record100B", func(b *testing.B) {
		var dst Record
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if err := msgpack.Unmarshal(data, &dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
