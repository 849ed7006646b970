package protocol

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestNormalizeTTL: sub-second TTLs round up to a second, and zero, negative
// and over-30-day TTLs are ErrInvalidTTL: there is no never-expire TTL to
// reach by omission (PRE-4).
func TestNormalizeTTL(t *testing.T) {
	ok := []struct {
		in, want time.Duration
	}{
		{time.Nanosecond, time.Second},
		{time.Millisecond, time.Second},
		{999 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{time.Second + time.Nanosecond, 2 * time.Second},
		{1500 * time.Millisecond, 2 * time.Second},
		{300 * time.Second, 300 * time.Second},
		{MaxTTL - time.Nanosecond, MaxTTL},
		{MaxTTL - time.Second, MaxTTL - time.Second},
		{MaxTTL, MaxTTL},
	}
	for _, c := range ok {
		got, err := NormalizeTTL(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeTTL(%v) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []time.Duration{
		0, -time.Nanosecond, -time.Second, math.MinInt64,
		MaxTTL + time.Nanosecond, MaxTTL + time.Second, math.MaxInt64,
	}
	for _, d := range bad {
		got, err := NormalizeTTL(d)
		var fe *FormatError
		if errors.As(err, &fe) || !errors.Is(err, ErrInvalidTTL) || got != 0 {
			t.Errorf("NormalizeTTL(%v) = %v, %v; want a ttl error", d, got, err)
		}
	}
	if MaxTTL != 2592000*time.Second {
		t.Fatalf("MaxTTL is %v", MaxTTL)
	}
}
