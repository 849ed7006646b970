package encryption

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// gatedProvider blocks every call until release is closed, counting calls.
type gatedProvider struct {
	calls   atomic.Int64
	started chan struct{} // receives one value per call
	release chan struct{}
	keys    func() Keys
	err     error
}

func newGatedProvider(t *testing.T) *gatedProvider {
	return &gatedProvider{
		started: make(chan struct{}, 1000),
		release: make(chan struct{}),
		keys:    func() Keys { return Keys{Current: vectors.Hex(t, testKeyHex)} },
	}
}

func (g *gatedProvider) provide(ctx context.Context) (Keys, error) {
	g.calls.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return Keys{}, ctx.Err()
	}
	if g.err != nil {
		return Keys{}, g.err
	}
	return g.keys(), nil
}

func providerManager(t *testing.T, p KeyProvider) *Manager {
	t.Helper()
	m, err := NewManager(Config{Provider: p, Tenant: "lazy"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestBlockingProviderDefers(t *testing.T) {
	g := newGatedProvider(t)
	m := providerManager(t, g.provide)
	pt, aad := []byte("plain"), []byte("aad")
	out, d, err := m.EncryptNow(nil, pt, aad)
	if out != nil || d == nil || err != nil {
		t.Fatalf("before derivation: out=%v d=%v err=%v, want a Deferred", out, d, err)
	}
	if m.Stats().Ready {
		t.Fatal("ready before derivation")
	}
	// A waiter whose ctx ends gives up without cancelling the derivation.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := d.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with an expiring ctx: %v", err)
	}
	<-g.started
	close(g.release)
	sealed, err := d.Wait(context.Background())
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if again, err := d.Wait(context.Background()); err != nil || !bytes.Equal(again, sealed) {
		t.Fatal("second Wait does not repeat the result")
	}
	if g.calls.Load() != 1 {
		t.Fatalf("provider called %d times", g.calls.Load())
	}
	// Now the fast path.
	got, d2, err := m.DecryptNow(nil, sealed, aad)
	if d2 != nil || err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("DecryptNow after derivation: d=%v err=%v", d2 != nil, err)
	}
	// A deferred decryption reports its key index.
	m2 := providerManager(t, func(context.Context) (Keys, error) {
		return Keys{Current: bytes.Repeat([]byte{9}, KeySize), Previous: [][]byte{vectors.Hex(t, testKeyHex)}}, nil
	})
	_, _, d3, err := m2.DecryptNowInfo(nil, sealed, aad)
	if d3 == nil || err != nil {
		t.Fatalf("want a Deferred, got err=%v", err)
	}
	if got, err := d3.Wait(context.Background()); err != nil || !bytes.Equal(got, pt) || d3.Info().KeyIndex != 1 {
		t.Fatalf("deferred decrypt: err=%v index=%d", err, d3.Info().KeyIndex)
	}
}

func TestSingleFlight(t *testing.T) {
	g := newGatedProvider(t)
	m := providerManager(t, g.provide)
	const callers = 100
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			_, err := m.Encrypt(context.Background(), nil, []byte{byte(i)}, nil)
			errs <- err
		})
	}
	<-g.started
	time.Sleep(20 * time.Millisecond) // let the other callers pile up behind the flight (nothing counts its waiters)
	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("caller failed: %v", err)
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("provider called %d times for %d concurrent first callers", n, callers)
	}
	if st := m.Stats(); st.Encryptions != callers || !st.Ready {
		t.Fatalf("Stats: encryptions %d ready %v", st.Encryptions, st.Ready)
	}
}

func TestFailedDerivationIsRetried(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("secret store unavailable")
	m := providerManager(t, func(context.Context) (Keys, error) {
		if calls.Add(1) == 1 {
			return Keys{}, boom
		}
		return Keys{Current: vectors.Hex(t, testKeyHex)}, nil
	})
	err := m.Warm(context.Background())
	var pe *ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, boom) {
		t.Fatalf("first Warm: %v, want a *ProviderError wrapping the cause", err)
	}
	if _, d, _ := m.EncryptNow(nil, nil, nil); d == nil {
		t.Fatal("failed derivation left the Manager ready")
	}
	if err := m.Warm(context.Background()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if calls.Load() != 2 || m.Stats().DerivationFailures != 1 {
		t.Fatalf("calls %d, failures %d", calls.Load(), m.Stats().DerivationFailures)
	}
	// Ready now: no more provider calls.
	for range 10 {
		if _, d, err := m.EncryptNow(nil, nil, nil); d != nil || err != nil {
			t.Fatal("not on the fast path after derivation")
		}
	}
	if calls.Load() != 2 {
		t.Fatal("provider called after a successful derivation")
	}
}

func TestProviderPanicAndBadKeys(t *testing.T) {
	m := providerManager(t, func(context.Context) (Keys, error) { panic("key=" + testKeyHex) })
	err := m.Warm(context.Background())
	var pe *ProviderError
	if !errors.As(err, &pe) || bytes.Contains([]byte(err.Error()), []byte(testKeyHex[:8])) {
		t.Fatalf("panicking provider: %v", err)
	}
	m = providerManager(t, func(context.Context) (Keys, error) { return Keys{}, nil })
	if err := m.Warm(context.Background()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("provider with no key: %v", err)
	}
	m = providerManager(t, func(context.Context) (Keys, error) {
		k := vectors.Hex(t, testKeyHex)
		return Keys{Current: k, Previous: [][]byte{bytes.Clone(k)}}, nil
	})
	if err := m.Warm(context.Background()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("provider repeating the current key: %v", err)
	}
}

func TestCloseDuringDerivation(t *testing.T) {
	g := newGatedProvider(t)
	var handed Keys
	g.keys = func() Keys { handed = Keys{Current: vectors.Hex(t, testKeyHex)}; return handed }
	m := providerManager(t, g.provide)
	_, d, _ := m.EncryptNow(nil, []byte("x"), nil)
	waitErr := make(chan error, 1)
	go func() { _, err := d.Wait(context.Background()); waitErr <- err }()
	<-g.started
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waitErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiter got %v, want ErrClosed", err)
	}
	if m.Stats().Ready || !m.Stats().Closed {
		t.Fatal("closed manager reports ready")
	}

	// A provider that ignores ctx and completes after Close: its keys are
	// discarded and zeroed, and the waiters get ErrClosed.
	slow, called := make(chan struct{}), make(chan struct{})
	markCalled := sync.OnceFunc(func() { close(called) })
	var slowKeys Keys
	m2 := providerManager(t, func(context.Context) (Keys, error) {
		markCalled()
		<-slow
		slowKeys = Keys{Current: vectors.Hex(t, testKeyHex), Previous: [][]byte{vectors.Hex(t, "2222222222222222222222222222222222222222222222222222222222222222")}}
		return slowKeys, nil
	})
	errc := make(chan error, 1)
	go func() { errc <- m2.Warm(context.Background()) }()
	<-called // the provider is running when Close comes
	_ = m2.Close()
	close(slow)
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Warm racing Close: %v", err)
	}
	if !isZero(slowKeys.Current) || !isZero(slowKeys.Previous[0]) {
		t.Fatal("master key bytes handed over by the provider were not zeroed")
	}
	if _, d, _ := m2.EncryptNow(nil, nil, nil); d == nil {
		t.Fatal("a derivation that lost the race to Close was published")
	}
}

func TestClosedManager(t *testing.T) {
	m := staticManager(t, "closing", testKeyHex)
	sealed, _, _ := m.EncryptNow(nil, []byte("v"), nil)
	for range 2 {
		if err := m.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	ctx := context.Background()
	if _, d, err := m.EncryptNow(nil, []byte("v"), nil); d == nil || err != nil {
		t.Fatal("EncryptNow after Close must defer")
	} else if _, err := d.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, d, _ := m.DecryptNow(nil, sealed, nil); d == nil {
		t.Fatal("DecryptNow after Close must defer")
	} else if _, err := d.Wait(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close: %v", err)
	}
	if _, err := m.Encrypt(ctx, nil, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if _, err := m.Decrypt(ctx, nil, sealed, nil); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := m.Warm(ctx); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if st := m.Stats(); !st.Closed || st.Ready || st.Encryptions != 1 {
		t.Fatalf("Stats after Close: %+v", st)
	}
}

func TestNewManagerConfig(t *testing.T) {
	key := vectors.Hex(t, testKeyHex)
	prev := [][]byte{bytes.Repeat([]byte{2}, KeySize)}
	p := func(context.Context) (Keys, error) { return Keys{}, nil }
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"no key", Config{}, false},
		{"previous only", Config{PreviousKeys: prev}, false},
		{"key and provider", Config{MasterKey: key, Provider: p}, false},
		{"previous and provider", Config{PreviousKeys: prev, Provider: p}, false},
		{"provider", Config{Provider: p}, true},
		{"key", Config{MasterKey: key}, true},
		{"key and previous", Config{MasterKey: key, PreviousKeys: prev}, true},
		{"short previous", Config{MasterKey: key, PreviousKeys: [][]byte{key[:31]}}, false},
		{"repeated previous", Config{MasterKey: key, PreviousKeys: [][]byte{prev[0], prev[0]}}, false},
		{"four previous", Config{MasterKey: key, PreviousKeys: [][]byte{{1}, {2}, {3}, {4}}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewManager(c.cfg)
			if c.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if err != nil {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Field == "" {
					t.Fatalf("err %v is not a *ConfigError naming its field", err)
				}
				return
			}
			_ = m.Close()
		})
	}
	// NewManager neither modifies nor retains the caller's bytes.
	keyCopy, prevCopy := bytes.Clone(key), bytes.Clone(prev[0])
	m, err := NewManager(Config{MasterKey: key, PreviousKeys: prev})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(key, keyCopy) || !bytes.Equal(prev[0], prevCopy) {
		t.Fatal("NewManager modified the config's key bytes")
	}
	sealed, _, _ := m.EncryptNow(nil, []byte("v"), nil)
	clear(key)
	if got, _, err := m.DecryptNow(nil, sealed, nil); err != nil || string(got) != "v" {
		t.Fatal("Manager depends on the caller's key slice")
	}
	if m.Stats().KeyringSize != 2 || len(m.Stats().PreviousFingerprints) != 1 {
		t.Fatalf("KeyringSize = %d", m.Stats().KeyringSize)
	}
}

func TestProviderKeysAreZeroed(t *testing.T) {
	var handed Keys
	m := providerManager(t, func(context.Context) (Keys, error) {
		handed = Keys{Current: vectors.Hex(t, testKeyHex), Previous: [][]byte{bytes.Repeat([]byte{3}, KeySize)}}
		return handed, nil
	})
	if err := m.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !isZero(handed.Current) || !isZero(handed.Previous[0]) {
		t.Fatal("provider's key bytes not zeroed after derivation")
	}
	// The derived keyring still works.
	sealed, _, err := m.EncryptNow(nil, []byte("v"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := m.DecryptNow(nil, sealed, nil); err != nil || string(got) != "v" {
		t.Fatalf("round trip: %v", err)
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return len(b) > 0
}

// TestKeyFingerprint: entry i's fingerprint is the one Stats names for it
// (0 the current key, then the previous keys), "" out of range.
func TestKeyFingerprint(t *testing.T) {
	m, err := NewManager(Config{MasterKey: bytes.Repeat([]byte{1}, KeySize),
		PreviousKeys: [][]byte{bytes.Repeat([]byte{2}, KeySize), bytes.Repeat([]byte{3}, KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := m.Stats()
	want := append([]string{st.Fingerprint}, st.PreviousFingerprints...)
	for i, w := range want {
		if got := m.KeyFingerprint(i); got != w || got == "" {
			t.Fatalf("KeyFingerprint(%d) = %q, want %q", i, got, w)
		}
	}
	if m.KeyFingerprint(-1) != "" || m.KeyFingerprint(len(want)) != "" {
		t.Fatal("a fingerprint out of range")
	}
}
