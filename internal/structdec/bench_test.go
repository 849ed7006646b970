package structdec

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// BenchmarkDecode compares Decode with msgpack.Unmarshal on the flat
// fixture (Record) and on the one with every field kind (Member), into a
// destination reused across iterations as cachekit's callers reuse theirs.
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
	member := encodeCompact(b, newMember())
	b.Run("structdec/Member300B", func(b *testing.B) {
		var dst Member
		b.SetBytes(int64(len(member)))
		b.ReportAllocs()
		for b.Loop() {
			if !Decode(member, &dst) {
				b.Fatal("Decode reported false")
			}
		}
	})
	b.Run("msgpack/Member300B", func(b *testing.B) {
		var dst Member
		b.SetBytes(int64(len(member)))
		b.ReportAllocs()
		for b.Loop() {
			if err := msgpack.Unmarshal(member, &dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
