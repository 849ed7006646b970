package protocol

import (
	"math/rand/v2"
	"testing"
)

// oldPrescan is the envelope pre-scan as it was written before it became
// walkMsgpack's prescan mode (its own loop, the tags in hex): the oracle
// that mode is held to, error for error.
func oldPrescan(env []byte) error {
	if len(env) == 0 {
		return envelopeErr(ErrMalformed, reasonPrescanTruncated)
	}
	budget := uint64(len(env) - 1)
	var (
		slots   uint64
		stack   [prescanMaxDepth]uint64
		depth   int
		pending uint64 = 1
		pos     int
	)
	for {
		for pending == 0 {
			if depth == 0 {
				return nil
			}
			depth--
			pending = stack[depth]
		}
		if pos >= len(env) {
			return envelopeErr(ErrMalformed, reasonPrescanTruncated)
		}
		m := env[pos]
		pos++
		pending--

		var (
			n         uint64 // declared slots of this header
			skip      uint64 // payload bytes that follow the header
			container bool
			width     int // bytes of the length field that follows the marker
		)
		switch {
		case m <= 0x7f || m >= 0xe0 || m == 0xc0 || m == 0xc2 || m == 0xc3:
			// fixint, nil, bool: no payload.
		case m&0xf0 == 0x80:
			n, container = uint64(m&0x0f)*2, true
		case m&0xf0 == 0x90:
			n, container = uint64(m&0x0f), true
		case m&0xe0 == 0xa0:
			n = uint64(m & 0x1f)
			skip = n
		case m == 0xc1:
			return envelopeErr(ErrMalformed, reasonPrescanMarker)
		case m == 0xc4 || m == 0xd9:
			width = 1
		case m == 0xc5 || m == 0xda:
			width = 2
		case m == 0xc6 || m == 0xdb:
			width = 4
		case m == 0xc7 || m == 0xc8 || m == 0xc9:
			width = 1 << (m - 0xc7) // ext8/16/32: length, then a type byte
		case m == 0xca:
			skip = 4
		case m == 0xcb:
			skip = 8
		case m >= 0xcc && m <= 0xcf:
			skip = 1 << (m - 0xcc)
		case m >= 0xd0 && m <= 0xd3:
			skip = 1 << (m - 0xd0)
		case m >= 0xd4 && m <= 0xd8:
			n = 1 << (m - 0xd4) // fixext data bytes
			skip = n + 1
		case m == 0xdc || m == 0xde:
			width, container = 2, true
		case m == 0xdd || m == 0xdf:
			width, container = 4, true
		}
		if width > 0 {
			if len(env)-pos < width {
				return envelopeErr(ErrMalformed, reasonPrescanTruncated)
			}
			n = readBE(env[pos:], width)
			pos += width
			switch {
			case m == 0xde || m == 0xdf:
				n *= 2
			case m >= 0xc7 && m <= 0xc9:
				skip = n + 1
			case !container:
				skip = n
			}
		}
		slots += n
		if slots > budget {
			return envelopeErr(ErrTooLarge, reasonPrescanBudget)
		}
		if container {
			if depth+1 > prescanMaxDepth {
				return envelopeErr(ErrTooLarge, reasonPrescanDepth)
			}
			if n > 0 {
				stack[depth] = pending
				depth++
				pending = n
			}
			continue
		}
		if uint64(len(env)-pos) < skip {
			return envelopeErr(ErrMalformed, reasonPrescanTruncated)
		}
		pos += int(skip)
	}
}

// TestPrescanMatchesOld: on random short documents biased to header bytes,
// prescanEnvelope (walkMsgpack in prescan mode) gives exactly the old
// pre-scan's verdict and reason.
func TestPrescanMatchesOld(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tags := []byte{0x00, 0x7f, 0x80, 0x81, 0x82, 0x8f, 0x90, 0x91, 0x92, 0x9f, 0xa0, 0xa1, 0xa5, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff, 0x01, 0x02, 0x03}
	for range 500_000 {
		n := rng.IntN(64)
		b := make([]byte, n)
		for j := range b {
			if rng.IntN(3) == 0 {
				b[j] = byte(rng.IntN(256))
			} else {
				b[j] = tags[rng.IntN(len(tags))]
			}
		}
		o, nw := oldPrescan(b), prescanEnvelope(b)
		if (o == nil) != (nw == nil) || (o != nil && o.Error() != nw.Error()) {
			t.Fatalf("%x: old %v, new %v", b, o, nw)
		}
	}
}
