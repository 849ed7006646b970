package main

import (
	"strings"
	"testing"
)

func TestRatioTableUsesMedians(t *testing.T) {
	in := `BenchmarkCachekit/L1Hit/encrypted/struct/100B-2  10  900 ns/op
BenchmarkCachekit/L1Hit/encrypted/struct/100B-2  10 1000 ns/op
BenchmarkCachekit/L1Hit/encrypted/struct/100B-2  10 5000 ns/op
BenchmarkPeer/GoRedisCache/LocalHit/struct/100B-2 10 800 ns/op
BenchmarkPeer/GoRedisCache/LocalHit/struct/100B-2 10 800 ns/op
BenchmarkCachekit/MGet100/encrypted/bytes/100B-2 10 100000 ns/op
BenchmarkCachekit/GetSeq100/encrypted/bytes/100B-2 10 3000000 ns/op
`
	s := map[string][]float64{}
	if err := parse(strings.NewReader(in), s); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	missed := printTable(&sb, s)
	out := sb.String()
	if !strings.Contains(out, "1.25x") { // median 1000 / 800
		t.Fatalf("want ratio 1.25x from medians:\n%s", out)
	}
	if !strings.Contains(out, "30.00x") || missed != 1 { // 3e6/1e5 meets >=20x; 1.25 misses <=1.0
		t.Fatalf("missed=%d\n%s", missed, out)
	}
}
