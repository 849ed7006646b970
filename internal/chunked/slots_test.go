package chunked

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSlots: a nil Slots and a small job take no slot; a large job takes
// one, a second waits until its ctx ends; ready runs before the wait and
// its error comes back as it is.
func TestSlots(t *testing.T) {
	ctx := context.Background()
	var none *Slots
	if held, err := none.Enter(ctx, 1<<30, nil); held || err != nil {
		t.Fatalf("nil Slots: held %v, err %v", held, err)
	}
	s := NewSlots(1, 100, false)
	if held, err := s.Enter(ctx, 99, nil); held || err != nil {
		t.Fatalf("small job: held %v, err %v", held, err)
	}
	held, err := s.Enter(ctx, 100, nil)
	if !held || err != nil {
		t.Fatalf("large job: held %v, err %v", held, err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if held2, err := s.Enter(short, 100, nil); held2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second large job with the slot taken: held %v, err %v", held2, err)
	}
	boom := errors.New("not ready")
	if held2, err := s.Enter(ctx, 100, func(context.Context) error { return boom }); held2 || err != boom {
		t.Fatalf("ready failed: held %v, err %v", held2, err)
	}
	s.Leave(held)
	if held, err = s.Enter(ctx, 100, nil); !held || err != nil {
		t.Fatalf("after Leave: held %v, err %v", held, err)
	}
	s.Leave(held)
	if NewSlots(0, 100, true) != nil {
		t.Fatal("unbounded Slots is not nil")
	}
}
