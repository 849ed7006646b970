package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/l2"
)

var bg = context.Background()

// BackendError is l2's, as the Guard returns it.
type BackendError = l2.BackendError

func TestBreakerOpensRefusesProbesAndCloses(t *testing.T) {
	t.Parallel()
	clk := testenv.NewClock(time.Unix(1000, 0))
	g := New(Config{BreakerThreshold: 3, BreakerOpenFor: time.Second}, Hooks{Now: clk.Now})
	b := g.br
	for i := range 3 {
		ok, probe := b.allow()
		if !ok || probe {
			t.Fatalf("closed breaker refused call %d", i)
		}
		b.record(false, outcomeFailure)
	}
	if st, n := b.snapshot(); st != Open || n != 1 {
		t.Fatalf("after 3 failures: %v (opened %d)", st, n)
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("open breaker let a call through")
	}
	clk.Add(time.Second)
	ok, probe := b.allow()
	if !ok || !probe {
		t.Fatal("half-open breaker refused its probe")
	}
	if ok, _ := b.allow(); ok {
		t.Fatal("half-open breaker let a second probe through (limit 1)")
	}
	b.record(true, outcomeFailure) // probe failed: reopen
	if st, n := b.snapshot(); st != Open || n != 2 {
		t.Fatalf("failed probe: %v (opened %d)", st, n)
	}
	clk.Add(time.Second)
	_, probe = b.allow()
	b.record(probe, outcomeSuccess)
	if st, _ := b.snapshot(); st != Closed {
		t.Fatalf("successful probe: %v", st)
	}
	// A success in between resets the consecutive count.
	b.record(false, outcomeFailure)
	b.record(false, outcomeFailure)
	b.record(false, outcomeSuccess)
	b.record(false, outcomeFailure)
	b.record(false, outcomeNeutral)
	if st, _ := b.snapshot(); st != Closed {
		t.Fatalf("non-consecutive failures opened it: %v", st)
	}
}

func TestGuardRetriesTransientOnly(t *testing.T) {
	t.Parallel()
	g := New(Config{MaxAttempts: 3, RetryBaseDelay: time.Millisecond, DisableBreaker: true}, Hooks{Now: time.Now})
	var calls int
	err := g.Do(bg, "get", func(context.Context) error {
		calls++
		if calls < 3 {
			return &BackendError{Op: "get", Err: io.EOF}
		}
		return nil
	})
	if err != nil || calls != 3 || g.retries.Load() != 2 {
		t.Fatalf("transient: err %v after %d calls, %d retries", err, calls, g.retries.Load())
	}
	calls = 0
	permanent := errors.New("WRONGTYPE")
	if err := g.Do(bg, "get", func(context.Context) error { calls++; return permanent }); err != permanent || calls != 1 {
		t.Fatalf("permanent: %v after %d calls", err, calls)
	}
	calls = 0
	err = g.Do(bg, "get", func(context.Context) error { calls++; return &BackendError{Op: "get", Err: io.EOF} })
	if !errors.Is(err, io.EOF) || calls != 3 {
		t.Fatalf("exhausted: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	calls = 0
	_ = g.Do(ctx, "get", func(context.Context) error { calls++; return &BackendError{Op: "get", Err: io.EOF} })
	if calls != 1 {
		t.Fatalf("retried after the caller's ctx ended: %d calls", calls)
	}
}

func TestGuardBreakerRefusesWithBackendError(t *testing.T) {
	t.Parallel()
	clk := testenv.NewClock(time.Unix(1000, 0))
	g := New(Config{MaxAttempts: 1, BreakerThreshold: 2, BreakerOpenFor: time.Minute}, Hooks{Now: clk.Now})
	fail := func(context.Context) error { return &BackendError{Op: "get", Err: io.EOF} }
	_ = g.Do(bg, "get", fail)
	_ = g.Do(bg, "get", fail)
	var called bool
	err := g.Do(bg, "get", func(context.Context) error { called = true; return nil })
	var be *BackendError
	if called || !errors.Is(err, ErrCircuitOpen) || !errors.As(err, &be) || be.Op != "get" {
		t.Fatalf("open breaker: called=%v err=%v", called, err)
	}
}

func TestGuardBackpressureBoundsWait(t *testing.T) {
	t.Parallel()
	g := New(Config{MaxInFlight: 1, MaxWait: 20 * time.Millisecond, DisableBreaker: true}, Hooks{Now: time.Now})
	hold := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_ = g.Do(bg, "get", func(context.Context) error { close(started); <-hold; return nil })
	}()
	<-started
	var ran atomic.Bool
	err := g.Do(bg, "get", func(context.Context) error { ran.Store(true); return nil })
	close(hold)
	var be *BackendError
	if ran.Load() || !errors.Is(err, ErrOverloaded) || !errors.As(err, &be) || g.shed.Load() != 1 {
		t.Fatalf("over the in-flight bound: ran=%v err=%v", ran.Load(), err)
	}
	if err := g.Do(bg, "get", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("slot not released: %v", err)
	}
}

func TestNilGuardRunsDirectly(t *testing.T) {
	t.Parallel()
	var g *Guard
	e := &BackendError{Op: "get", Err: io.EOF}
	calls := 0
	if err := g.Do(bg, "get", func(context.Context) error { calls++; return e }); err != e || calls != 1 {
		t.Fatalf("reliability off: %v after %d calls", err, calls)
	}
}

// BenchmarkGuardDo is the reliability stack's own cost per Redis operation
// (slot, breaker, one attempt under its deadline) around a call that does
// nothing; a loopback Redis round trip is 30-50 µs.
func BenchmarkGuardDo(b *testing.B) {
	g := New(Config{}, Hooks{Now: time.Now})
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Do(bg, "get", fn)
	}
}

// TestGuardOneBudget: against a call that hangs until its ctx ends, every
// attempt is cut at AttemptTimeout and the whole operation at
// OperationTimeout, retries included; a caller's earlier deadline wins.
func TestGuardOneBudget(t *testing.T) {
	// Not parallel: bounds an operation between 70 and 150 ms.
	g := New(Config{AttemptTimeout: 40 * time.Millisecond, OperationTimeout: 100 * time.Millisecond,
		MaxAttempts: 10, DisableBreaker: true}, Hooks{Now: time.Now})
	var attempts atomic.Int32
	hang := func(ctx context.Context) error {
		attempts.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	start := time.Now()
	err := g.Do(bg, "get", hang)
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout (the guard's budget, not the caller's deadline)", err)
	}
	if took < 70*time.Millisecond || took > 150*time.Millisecond {
		t.Fatalf("operation took %v, want within OperationTimeout (100ms), no retry started past it", took)
	}
	if n := attempts.Load(); n < 2 || n > 3 {
		t.Fatalf("%d attempts, want 2 or 3 within the budget", n)
	}
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = g.Do(ctx, "get", hang)
	if took := time.Since(start); took > 60*time.Millisecond {
		t.Fatalf("a 20ms caller deadline: operation took %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a 20ms caller deadline: err = %v, want context.DeadlineExceeded", err)
	}
}

// TestOpenBreakerRefusesBeforeSlotWait: with every in-flight slot taken by
// hung calls, an open breaker still refuses at once (not after MaxWait with
// ErrOverloaded).
func TestOpenBreakerRefusesBeforeSlotWait(t *testing.T) {
	// Not parallel: bounds a refusal at 10 ms.
	clk := testenv.NewClock(time.Unix(1000, 0))
	g := New(Config{MaxInFlight: 1, MaxAttempts: 1, BreakerThreshold: 1, MaxWait: time.Second}, Hooks{Now: clk.Now})
	_ = g.Do(bg, "get", func(context.Context) error { return io.EOF }) // opens
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		g.slots <- struct{}{} // a hung call holds the only slot
		close(held)
		<-release
		<-g.slots
	}()
	<-held
	defer close(release)
	start := time.Now()
	err := g.Do(bg, "get", func(context.Context) error { return nil })
	if !errors.Is(err, ErrCircuitOpen) || time.Since(start) > 10*time.Millisecond {
		t.Fatalf("open breaker with no free slot: %v after %v, want ErrCircuitOpen at once", err, time.Since(start))
	}
}

// TestOnlyAnAnswerClosesTheBreaker: the prober counts a PING as evidence
// only when Redis itself answered.
func TestOnlyAnAnswerClosesTheBreaker(t *testing.T) {
	t.Parallel()
	for _, err := range []error{context.Canceled, context.DeadlineExceeded, io.EOF, errors.New("x509: bad certificate")} {
		if l2.Answered(err) {
			t.Errorf("%v counted as Redis answering", err)
		}
	}
	if !l2.Answered(nil) || !l2.Answered(fmt.Errorf("ping: %w", replyErr("LOADING Redis is loading"))) {
		t.Error("a PONG or an error reply must count as Redis answering")
	}
}

// replyErr is an error reply as go-redis returns it (a redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestLargeWriteGetsTransferTime: a write of n bytes gets TransferTime(n)
// on top of AttemptTimeout for its attempt (4 s for 64 MiB), a small one
// none, and a caller's deadline still wins.
func TestLargeWriteGetsTransferTime(t *testing.T) {
	// Not parallel: bounds a deadline read back within 1 ms of AttemptTimeout.
	g := New(Config{AttemptTimeout: 50 * time.Millisecond, OperationTimeout: 100 * time.Millisecond, DisableBreaker: true}, Hooks{Now: time.Now})
	left := func(ctx context.Context, n int) time.Duration {
		var d time.Duration
		_ = g.DoSized(ctx, "set", n, func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			d = time.Until(dl)
			return nil
		})
		return d
	}
	if d := left(context.Background(), 100); d > 51*time.Millisecond {
		t.Errorf("a 100-byte write's attempt has %v, want about AttemptTimeout (50ms; 100 B add 6 µs)", d)
	}
	if d := left(context.Background(), 64<<20); d < 4*time.Second || d > 4*time.Second+50*time.Millisecond {
		t.Errorf("a 64 MiB write's attempt has %v, want 4s + AttemptTimeout", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if d := left(ctx, 64<<20); d > 30*time.Millisecond {
		t.Errorf("with a 30ms caller deadline the attempt has %v", d)
	}
}

// TestUnknownOutcomeIsNotResent: a write whose outcome is unknown is never
// sent again by Do (its first attempt may have landed, and a resend could
// land again after another process's write); what provably was not sent
// is retried. DoResend resends it, telling fn so, and the call's error
// matches l2.ErrOutcomeUnknown whatever a later attempt saw.
func TestUnknownOutcomeIsNotResent(t *testing.T) {
	t.Parallel()
	g := New(Config{MaxAttempts: 3, RetryBaseDelay: time.Millisecond, DisableBreaker: true}, Hooks{})
	lost := l2.OutcomeUnknown("set", io.ErrUnexpectedEOF)
	unsent := &BackendError{Op: "set", Err: syscall.ECONNREFUSED}

	var calls int
	err := g.Do(bg, "set", func(context.Context) error { calls++; return lost })
	if calls != 1 || !errors.Is(err, l2.ErrOutcomeUnknown) {
		t.Fatalf("Do of a write of unknown outcome: %d attempts, %v; want 1 attempt and ErrOutcomeUnknown", calls, err)
	}
	calls = 0
	err = g.Do(bg, "set", func(context.Context) error {
		calls++
		if calls == 1 {
			return unsent
		}
		return nil
	})
	if calls != 2 || err != nil {
		t.Fatalf("Do of a write refused before sending: %d attempts, %v; want it retried once and nil", calls, err)
	}

	var resends []bool
	err = g.DoResend(bg, "set", 0, func(_ context.Context, resend bool) error {
		resends = append(resends, resend)
		if len(resends) == 1 {
			return lost
		}
		return unsent // the resend held at a fence: never sent
	})
	if fmt.Sprint(resends) != "[false true true]" || !errors.Is(err, l2.ErrOutcomeUnknown) {
		t.Fatalf("DoResend: resend flags %v, error %v; want [false true true] and ErrOutcomeUnknown", resends, err)
	}
	resends = resends[:0]
	err = g.DoResend(bg, "set", 0, func(_ context.Context, resend bool) error {
		resends = append(resends, resend)
		if len(resends) == 1 {
			return lost
		}
		return nil
	})
	if fmt.Sprint(resends) != "[false true]" || err != nil {
		t.Fatalf("DoResend whose resend answered: flags %v, error %v; want [false true] and nil", resends, err)
	}
	// The breaker opening after a lost attempt refuses the resend: still
	// unknown.
	tripping := New(Config{MaxAttempts: 3, RetryBaseDelay: time.Millisecond, BreakerThreshold: 1}, Hooks{})
	err = tripping.DoResend(bg, "set", 0, func(context.Context, bool) error { return lost })
	if !errors.Is(err, l2.ErrOutcomeUnknown) || !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("DoResend refused by the breaker after a lost attempt = %v, want ErrCircuitOpen matching ErrOutcomeUnknown", err)
	}
}

// tryAgain is Redis's TRYAGAIN reply as go-redis returns it (a
// redis.Error).
type tryAgain struct{}

func (tryAgain) Error() string { return "TRYAGAIN Multiple keys request during rehashing of slot" }
func (tryAgain) RedisError()   {}

// TestMigrationDoesNotOpenTheBreaker: TRYAGAIN (a multi-key command met a
// cluster slot being moved) is retried like any transient reply, but the
// server answered it: however many come in a row, the breaker stays
// closed (TestFaultsClusterReshard's MGets once opened it for 250 ms).
func TestMigrationDoesNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	clk := testenv.NewClock(time.Unix(1000, 0))
	g := New(Config{MaxAttempts: 2, RetryBaseDelay: time.Millisecond, BreakerThreshold: 2, BreakerOpenFor: time.Minute}, Hooks{Now: clk.Now})
	calls := 0
	for range 5 {
		err := g.Do(bg, "mget", func(context.Context) error { calls++; return &BackendError{Op: "mget", Err: tryAgain{}} })
		if !l2.Migrating(err) {
			t.Fatalf("Do = %v, want the TRYAGAIN reply", err)
		}
	}
	if calls != 10 {
		t.Fatalf("%d attempts, want 10 (TRYAGAIN retried once each)", calls)
	}
	if st := g.Stats(); st.Breaker != Closed || st.Opened != 0 {
		t.Fatalf("breaker %v after 10 TRYAGAIN replies (opened %d times), want closed", st.Breaker, st.Opened)
	}
}
