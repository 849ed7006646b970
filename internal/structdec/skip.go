package structdec

// maxSkipDepth bounds the nesting of a value skipped for an unknown key,
// the same ceiling the protocol package puts on a whole payload. Deeper
// values are left to msgpack.
const maxSkipDepth = 1024

// skip steps over one well-formed msgpack value of any type, as msgpack's
// Skip does (0xc1, the never-used code, is an error there and false here).
// depth counts the collections the value sits in.
func (r *reader) skip(depth int) bool {
	c, ok := r.code()
	if !ok {
		return false
	}
	switch {
	case c <= 0x7f || c >= 0xe0: // fixnums
		return true
	case c <= 0x8f:
		return r.skipMap(int(c&0x0f), depth)
	case c <= 0x9f:
		return r.skipArray(int(c&0x0f), depth)
	case c <= 0xbf:
		return r.advance(int(c & 0x1f))
	}
	switch c {
	case cNil, cFalse, cTrue:
		return true
	case cUint8, cInt8:
		return r.advance(1)
	case cUint16, cInt16:
		return r.advance(2)
	case cUint32, cInt32, cFloat:
		return r.advance(4)
	case cUint64, cInt64, cDouble:
		return r.advance(8)
	case cBin8, cStr8:
		n, ok := count(r.u8())
		return ok && r.advance(n)
	case cBin16, cStr16:
		n, ok := count(r.u16())
		return ok && r.advance(n)
	case cBin32, cStr32:
		n, ok := count(r.u32())
		return ok && r.advance(n)
	case cArr16, cArr32:
		n, ok := r.arrayLen(c)
		return ok && r.skipArray(n, depth)
	case cMap16, cMap32:
		n, ok := r.mapLen(c)
		return ok && r.skipMap(n, depth)
	case cFixExt, cFixExt + 1, cFixExt + 2, cFixExt + 3, cFixExt + 4:
		// One type byte, then 1, 2, 4, 8 or 16 data bytes.
		return r.advance(1 + 1<<(c-cFixExt))
	case cExt8:
		n, ok := count(r.u8())
		return ok && r.advance(n) && r.advance(1)
	case cExt16:
		n, ok := count(r.u16())
		return ok && r.advance(n) && r.advance(1)
	case cExt32:
		n, ok := count(r.u32())
		return ok && r.advance(n) && r.advance(1)
	}
	return false
}

// skipArray skips n values inside a collection at depth.
func (r *reader) skipArray(n, depth int) bool {
	// Each value takes at least one byte; a longer count is truncated
	// input, so there is no reason to loop over it.
	if depth >= maxSkipDepth || n > r.remaining() {
		return false
	}
	for ; n > 0; n-- {
		if !r.skip(depth + 1) {
			return false
		}
	}
	return true
}

// skipMap skips n key/value pairs inside a collection at depth.
func (r *reader) skipMap(n, depth int) bool {
	if depth >= maxSkipDepth || n > r.remaining()/2 {
		return false
	}
	for n *= 2; n > 0; n-- { // a key, then its value
		if !r.skip(depth + 1) {
			return false
		}
	}
	return true
}
