package flight

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLoadMarksAndOverrides: Load returns the loader's value with the TTL
// it was given, or the last OverrideTTL the loader made through its ctx;
// the loader's error comes back marked, and Unmark takes the mark off.
func TestLoadMarksAndOverrides(t *testing.T) {
	v, ttl, err := Load(bg, func(context.Context) (int, error) { return 7, nil }, time.Minute)
	if v != 7 || ttl != time.Minute || err != nil {
		t.Fatalf("Load = %v, %v, %v", v, ttl, err)
	}
	_, ttl, _ = Load(bg, func(ctx context.Context) (int, error) {
		OverrideTTL(ctx, time.Second)
		OverrideTTL(ctx, 2*time.Second) // the last call wins
		return 0, nil
	}, time.Minute)
	if ttl != 2*time.Second {
		t.Fatalf("overridden TTL = %v, want 2s", ttl)
	}
	OverrideTTL(bg, time.Second) // not a loader's ctx: no effect, no panic
	cause := errors.New("source down")
	_, _, err = Load(bg, func(context.Context) (int, error) { return 0, cause }, time.Minute)
	if _, ok := err.(*LoaderError); !ok || !errors.Is(err, cause) {
		t.Fatalf("loader error = %#v, want a *LoaderError wrapping the cause", err)
	}
	if got, marked := Unmark(err); got != cause || !marked {
		t.Fatalf("Unmark = %v, %v", got, marked)
	}
	if got, marked := Unmark(cause); got != cause || marked {
		t.Fatalf("Unmark of an unmarked error = %v, %v", got, marked)
	}
	if got, marked := Unmark(nil); got != nil || marked {
		t.Fatalf("Unmark(nil) = %v, %v", got, marked)
	}
}

// TestPanickedNamesOnlyTheType: a recovered panic becomes a loader error
// that names the panic value's type, never its text.
func TestPanickedNamesOnlyTheType(t *testing.T) {
	err := Panicked("secret-key-material")
	if _, marked := Unmark(err); !marked || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "string") {
		t.Fatalf("Panicked = %q", err)
	}
}
