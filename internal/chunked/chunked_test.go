package chunked

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

func data(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n)})
	_, _ = r.Read(b)
	return b
}

// TestXXH3MatchesOneShot: the streamed hash equals xxh3.Hash for lengths
// around every piece boundary.
func TestXXH3MatchesOneShot(t *testing.T) {
	for _, n := range []int{0, 1, 240, Size - 1, Size, Size + 1, 2*Size + 17, 5<<20 + 3} {
		b := data(n)
		if XXH3(b) != xxh3.Hash(b) {
			t.Errorf("%d bytes: streamed xxh3 differs from xxh3.Hash", n)
		}
	}
}

func TestCopyAndAppend(t *testing.T) {
	for _, n := range []int{0, 5, Size, Size + 1, 3*Size + 7} {
		src := data(n)
		dst := make([]byte, n)
		if Copy(dst, src) != n || !bytes.Equal(dst, src) {
			t.Errorf("%d bytes: Copy differs", n)
		}
		head := []byte("head")
		if got := Append(head, src); !bytes.Equal(got, append([]byte("head"), src...)) {
			t.Errorf("%d bytes: Append differs", n)
		}
		if got := AppendString(make([]byte, 0, n+1), string(src)); !bytes.Equal(got, src) {
			t.Errorf("%d bytes: AppendString differs", n)
		}
		if got := Bytes(string(src)); !bytes.Equal(got, src) || got == nil {
			t.Errorf("%d bytes: Bytes differs", n)
		}
	}
	for _, n := range []int{3, Size + 1} {
		g := Grow([]byte("ab"), n)
		if string(g) != "ab" || cap(g)-len(g) < n {
			t.Errorf("Grow(%d) = len %d cap %d", n, len(g), cap(g))
		}
	}
	// An overlapping move down, as an envelope slides its block.
	b := data(3*Size + 9)
	want := append([]byte(nil), b[3:]...)
	Copy(b, b[3:])
	if !bytes.Equal(b[:len(want)], want) {
		t.Error("overlapping Copy down differs from copy")
	}
}

// TestNoPieceOverSize: the observer sees every piece, none above Size.
func TestNoPieceOverSize(t *testing.T) {
	var pieces, biggest int
	restore := Observe(func(n int) { pieces++; biggest = max(biggest, n) })
	b := data(4*Size + 1)
	XXH3(b)
	Append(nil, b)
	Clear(b)
	Copy(make([]byte, len(b)), b)
	restore()
	if biggest > Size || pieces != 20 {
		t.Fatalf("%d pieces, the largest %d bytes; want 20 of at most %d", pieces, biggest, Size)
	}
	XXH3(b)
	if pieces != 20 {
		t.Fatal("the observer outlived its restore")
	}
}

// TestOneShot: under SetOneShot every function gives the same result in
// one call (no piece is reported), and SetOneShot(false) restores pieces.
func TestOneShot(t *testing.T) {
	b := data(3*Size + 5)
	var pieces int
	defer Observe(func(int) { pieces++ })()
	SetOneShot(true)
	if !OneShot() {
		t.Fatal("OneShot() = false after SetOneShot(true)")
	}
	sum := XXH3(b)
	cp := make([]byte, len(b))
	Copy(cp, b)
	app := Append([]byte("x"), b)
	g := Grow([]byte("ab"), 2*Size)
	cl := append([]byte(nil), b...)
	Clear(cl)
	SetOneShot(false)
	if pieces != 0 {
		t.Fatalf("%d pieces reported in one-shot mode", pieces)
	}
	if sum != xxh3.Hash(b) || !bytes.Equal(cp, b) || !bytes.Equal(app[1:], b) || string(g) != "ab" || cap(g) < 2*Size+2 ||
		!bytes.Equal(cl, make([]byte, len(b))) {
		t.Fatal("one-shot results differ from the built-ins'")
	}
	XXH3(b)
	if pieces != 4 {
		t.Fatalf("after SetOneShot(false): %d pieces, want 4", pieces)
	}
}
