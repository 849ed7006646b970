package cacheaside

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms = int64(time.Millisecond)

// w is a write of v to key "k" over [call, ret] ms; r a read of "k" that
// returned v over [call, ret] ms.
func w(v int, call, ret int64) porcupine.Operation {
	return porcupine.Operation{Input: Input{Key: "k", Write: true, V: v, Ret: ret * ms}, Call: call * ms, Return: ret * ms}
}

func r(v int, call, ret int64) porcupine.Operation {
	return porcupine.Operation{Input: Input{Key: "k", Call: call * ms}, Call: call * ms, Output: v, Return: ret * ms}
}

// unknown is w of a write whose outcome is unknown (ret: the end of the
// history) and, with bound, that must precede the write of bound.
func unknown(v int, call, ret int64, bound int) porcupine.Operation {
	op := w(v, call, ret)
	in := op.Input.(Input)
	in.Unknown, in.Bound = true, bound
	op.Input = in
	return op
}

func ghostly(op porcupine.Operation) porcupine.Operation {
	in := op.Input.(Input)
	in.Ghost = true
	op.Input = in
	return op
}

func losable(op porcupine.Operation) porcupine.Operation {
	in := op.Input.(Input)
	in.Losable = true
	op.Input = in
	return op
}

// TestModelRejectsStaleRead: the model refuses a read of a value a write
// replaced before the read began (strictly, or more than δ before), and
// the reads that follow from an unknown write landing after its client's
// next write (the reordered write rule 22 forbids); it accepts what the
// cache may do (a read within δ, an unknown write that has not landed
// yet, a value a failover lost). Making the model accept a stale read as
// current fails the first cases.
func TestModelRejectsStaleRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		delta time.Duration
		ops   []porcupine.Operation
		ok    bool
	}{
		{"stale read after the write returned", 0,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 3), r(1, 10, 11)}, false},
		{"stale read beyond delta", 5 * time.Millisecond,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 3), r(1, 10, 11)}, false},
		{"stale read within delta", 10 * time.Millisecond,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 3), r(1, 10, 11)}, true},
		{"a value two writes old is as old as the last write", 10 * time.Millisecond,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 3), w(3, 20, 21), r(1, 25, 26)}, false},
		{"new then old while the write runs (source, then cache)", 0,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 20), r(2, 5, 6), r(1, 7, 8)}, true},
		{"new then old once the write returned", 0,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 4), r(2, 5, 6), r(1, 7, 8)}, false},
		{"read overlapping the write", 0,
			[]porcupine.Operation{w(1, 0, 1), w(2, 2, 20), r(1, 5, 6), r(2, 7, 8)}, true},
		{"unknown write not landed yet", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 0), r(1, 10, 11), r(2, 20, 21)}, true},
		{"unknown write lands after another client's write", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 0), w(3, 10, 11), r(3, 12, 13), r(2, 20, 21)}, true},
		{"unknown write lands after its own client's next write (reordered)", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 3), w(3, 10, 11), r(3, 12, 13), r(2, 20, 21)}, false},
		{"unknown write lands before its bound", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 3), r(1, 4, 5), r(2, 6, 7), w(3, 10, 11), r(3, 12, 13)}, true},
		{"unknown write never lands, its old value read until the bound", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 3), r(1, 4, 5), r(1, 8, 9), w(3, 10, 11), r(3, 12, 13)}, true},
		{"unknown write's old value after the bound", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 3), w(3, 10, 11), r(1, 12, 13)}, false},
		{"an unknown Set lands late, after another client's write", 0,
			[]porcupine.Operation{w(1, 0, 1), ghostly(unknown(2, 2, 100, 4)), r(2, 4, 5), w(3, 10, 11), r(2, 20, 21), w(4, 30, 31), r(4, 32, 33)}, true},
		{"an unknown Set's value after its bound", 0,
			[]porcupine.Operation{w(1, 0, 1), ghostly(unknown(2, 2, 100, 4)), r(2, 4, 5), w(3, 10, 11), w(4, 30, 31), r(2, 40, 41)}, false},
		{"an unknown delete brings no value back", 0,
			[]porcupine.Operation{w(1, 0, 1), unknown(2, 2, 100, 4), r(2, 4, 5), w(3, 10, 11), r(2, 20, 21)}, false},
		{"lost write's value comes back", 0,
			[]porcupine.Operation{w(1, 0, 1), losable(w(2, 2, 3)), r(2, 4, 5), r(1, 20, 21)}, true},
		{"lost write's value after a write that stays", 0,
			[]porcupine.Operation{w(1, 0, 1), losable(w(2, 2, 3)), w(3, 10, 11), r(1, 20, 21)}, false},
	}
	for _, tc := range cases {
		got := porcupine.CheckOperations(Model(tc.delta), tc.ops)
		if got != tc.ok {
			t.Errorf("%s (δ %v): linearizable = %v, want %v", tc.name, tc.delta, got, tc.ok)
		}
	}
}
