package gcmchunk

import "encoding/binary"

// elem is an element of GCM's GF(2^128), as the 16 big-endian bytes GCM
// writes it in: hi holds bytes 0-7. Bit 0 of the field (the coefficient of
// x^0) is the most significant bit of hi.
type elem struct{ hi, lo uint64 }

func load(b []byte) elem {
	return elem{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

func (x elem) store(b []byte) {
	binary.BigEndian.PutUint64(b, x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
}

func (x elem) xor(y elem) elem { return elem{x.hi ^ y.hi, x.lo ^ y.lo} }

// mul returns x·y in GCM's field (NIST SP 800-38D, Algorithm 1), in
// constant time: no branch or index depends on x or y.
func mul(x, y elem) elem {
	var z elem
	v := y
	step := func(bit uint64) {
		m := -bit
		z.hi ^= v.hi & m
		z.lo ^= v.lo & m
		r := -(v.lo & 1)
		v.lo = v.lo>>1 | v.hi<<63
		v.hi = v.hi>>1 ^ 0xe100000000000000&r
	}
	for i := 63; i >= 0; i-- {
		step(x.hi >> uint(i) & 1)
	}
	for i := 63; i >= 0; i-- {
		step(x.lo >> uint(i) & 1)
	}
	return z
}

// pow returns h^n for n ≥ 1 (n is public: a block count).
func pow(h elem, n int) elem {
	r := elem{hi: 1 << 63} // the field's 1
	for b := h; n > 0; n >>= 1 {
		if n&1 == 1 {
			r = mul(r, b)
		}
		b = mul(b, b)
	}
	return r
}
