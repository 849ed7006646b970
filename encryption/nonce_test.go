package encryption

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

var testKeyHex = "6161616161616161616161616161616161616161616161616161616161616161"

// TestNonceStress seals from 64 goroutines at once on one Manager and
// checks that every nonce is distinct: one instance id, and counters that
// are exactly 0..total-1, each once.
func TestNonceStress(t *testing.T) {
	const workers, each = 64, 20_000
	m := staticManager(t, "stress", testKeyHex)
	counters := make([][]uint32, workers)
	ids := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			pt, aad := []byte("payload!"), []byte("aad")
			buf := make([]byte, 0, len(pt)+Overhead)
			cs := make([]uint32, 0, each)
			for range each {
				sealed, d, err := m.EncryptNow(buf[:0], pt, aad)
				if d != nil || err != nil {
					t.Errorf("EncryptNow: deferred=%v err=%v", d != nil, err)
					return
				}
				id, c, err := ParseNonce(sealed)
				if err != nil {
					t.Errorf("ParseNonce: %v", err)
					return
				}
				if ids[w] == 0 {
					ids[w] = id
				} else if ids[w] != id {
					t.Errorf("instance id changed within one key")
					return
				}
				cs = append(cs, c)
			}
			counters[w] = cs
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	const total = workers * each
	seen := make([]bool, total)
	for w, cs := range counters {
		if ids[w] != ids[0] {
			t.Fatal("goroutines saw different instance ids")
		}
		for _, c := range cs {
			if int(c) >= total {
				t.Fatalf("counter %d beyond the %d reservations made", c, total)
			}
			if seen[c] {
				t.Fatalf("nonce counter %d handed out twice", c)
			}
			seen[c] = true
		}
	}
	if got := m.Stats().Encryptions; got != total {
		t.Fatalf("Stats.Encryptions = %d, want %d", got, total)
	}
}

func TestNonceExhaustionBoundary(t *testing.T) {
	m := staticManager(t, "exhaust", testKeyHex)
	m.setNonceForTest(7, counterLimit-2)
	pt, aad := []byte("x"), []byte("a")
	for i, want := range []uint32{counterLimit - 2, counterLimit - 1} {
		sealed, _, err := m.EncryptNow(nil, pt, aad)
		if err != nil {
			t.Fatalf("encryption %d below the limit failed: %v", i, err)
		}
		id, c, _ := ParseNonce(sealed)
		if id != 7 || c != want {
			t.Fatalf("nonce %d = (%d, %#x), want (7, %#x)", i, id, c, want)
		}
		if got, _ := m.Decrypt(context.Background(), nil, sealed, aad); !bytes.Equal(got, pt) {
			t.Fatal("sealed value does not open")
		}
	}
	for i := range 100 {
		out, d, err := m.EncryptNow(make([]byte, 3, 64), pt, aad)
		if !errors.Is(err, ErrNonceExhausted) || out != nil || d != nil {
			t.Fatalf("call %d after exhaustion: out=%v d=%v err=%v", i, out, d, err)
		}
		if _, err := m.Encrypt(context.Background(), nil, pt, aad); !errors.Is(err, ErrNonceExhausted) {
			t.Fatalf("Encrypt after exhaustion: %v", err)
		}
	}
	st := m.Stats()
	if !st.NonceExhausted || st.Encryptions != 2 {
		t.Fatalf("Stats = exhausted %v, encryptions %d; want true, 2", st.NonceExhausted, st.Encryptions)
	}
	// Decryption is unaffected by exhaustion.
	sealed := vectors.Hex(t, "f8f69c70000000000000000087d9ec09f2c2347a4b37d5330ccf50e3c31e69642801bef5")
	m2 := staticManager(t, "cross-sdk-test", testKeyHex)
	m2.setNonceForTest(1, counterLimit)
	if _, _, err := m2.DecryptNow(nil, sealed, vectors.Hex(t, "030000000e63726f73732d73646b2d746573740000000d746573743a766563746f723a31000000076d73677061636b0000000546616c7365")); err != nil {
		t.Fatalf("decrypt on an exhausted key: %v", err)
	}
}

func TestNonceConcurrentExhaustion(t *testing.T) {
	const below, workers = 50, 100
	m := staticManager(t, "exhaust", testKeyHex)
	m.setNonceForTest(9, counterLimit-below)
	var ok, exhausted atomic.Int64
	var mu sync.Mutex
	got := map[uint32]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			sealed, _, err := m.EncryptNow(nil, []byte("v"), nil)
			switch {
			case err == nil:
				ok.Add(1)
				_, c, _ := ParseNonce(sealed)
				mu.Lock()
				if got[c] {
					t.Errorf("counter %#x used twice", c)
				}
				got[c] = true
				mu.Unlock()
			case errors.Is(err, ErrNonceExhausted):
				exhausted.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != below || exhausted.Load() != workers-below {
		t.Fatalf("%d succeeded and %d exhausted; want %d and %d", ok.Load(), exhausted.Load(), below, workers-below)
	}
	for c := range got {
		if c < counterLimit-below || c >= counterLimit {
			t.Fatalf("counter %#x outside the %d values below the limit", c, below)
		}
	}
}

func TestInstanceIDsAreDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for range 1000 {
		s := newNonceSource()
		if seen[s.instance] {
			t.Fatal("instance id reused")
		}
		seen[s.instance] = true
	}
	// Two Managers on the same key never share nonces.
	a, b := staticManager(t, "x", testKeyHex), staticManager(t, "x", testKeyHex)
	sa, _, _ := a.EncryptNow(nil, nil, nil)
	sb, _, _ := b.EncryptNow(nil, nil, nil)
	if bytes.Equal(sa[:NonceSize], sb[:NonceSize]) {
		t.Fatal("two managers produced the same nonce")
	}
}

func TestParseNonce(t *testing.T) {
	sealed := append(vectors.Hex(t, "0102030405060708aabbccdd"), make([]byte, TagSize)...)
	id, c, err := ParseNonce(sealed)
	if err != nil || id != 0x0102030405060708 || c != 0xaabbccdd {
		t.Fatalf("ParseNonce = %#x, %#x, %v", id, c, err)
	}
	for n := range Overhead {
		var fe *LengthError
		if _, _, err := ParseNonce(sealed[:n]); !errors.As(err, &fe) || fe.Len != n {
			t.Fatalf("length %d: err = %v, want *LengthError", n, err)
		}
	}
}
