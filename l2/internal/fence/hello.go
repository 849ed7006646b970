package fence

// The connection's Redis client ID, read from the reply to the HELLO that
// go-redis sends first on every connection it opens: go-redis gives hooks
// no handle on a connection, and a fence needs the ID to name the
// connection to Redis (CLIENT KILL ID).

import "bytes"

// maxHello bounds the bytes of a first reply kept while looking for the ID:
// a HELLO reply is about 150 bytes (more with modules listed); past this
// the connection goes without an ID.
const maxHello = 4 << 10

// helloID looks for the client ID in b, the start of the first reply read
// on a connection. It returns the ID (> 0) once found; more when b ends
// before the ID and the reply could still hold it; neither when the reply
// is not a HELLO reply (an error, +OK from AUTH on a server without HELLO)
// or has no ID.
//
// A HELLO reply is a map (RESP3, "%7") or a flat array of keys and values
// (RESP2, "*14"): server, version, proto, id, mode, role, modules. Only the
// pairs before "id" are read; a value is skipped whatever its type.
func helloID(b []byte) (id int64, more bool) {
	if len(b) == 0 {
		return 0, true
	}
	pairs := int64(0)
	switch b[0] {
	case '%':
	case '*':
	default:
		return 0, false
	}
	n, i, st := respInt(b, 1)
	if st != scanDone {
		return 0, st == scanMore
	}
	if b[0] == '%' {
		pairs = n
	} else {
		pairs = n / 2
	}
	for range pairs {
		key, j, st := respString(b, i)
		if st != scanDone {
			return 0, st == scanMore
		}
		if string(key) == "id" {
			if j >= len(b) {
				return 0, true
			}
			if b[j] != ':' {
				return 0, false
			}
			v, _, st := respInt(b, j+1)
			if st != scanDone {
				return 0, st == scanMore
			}
			return max(v, 0), false
		}
		if i, st = respSkip(b, j, 0); st != scanDone {
			return 0, st == scanMore
		}
	}
	return 0, false
}

// scanState is how far a RESP scan got: the value is whole, b ends inside
// it, or the bytes are not RESP this scanner reads.
type scanState int

const (
	scanDone scanState = iota
	scanMore
	scanBad
)

// respLine returns the bytes of the line starting at b[i] (without CRLF)
// and the index after its CRLF.
func respLine(b []byte, i int) (line []byte, next int, st scanState) {
	if i > len(b) {
		return nil, 0, scanMore
	}
	k := bytes.Index(b[i:], []byte("\r\n"))
	if k < 0 {
		if len(b)-i > 64 {
			return nil, 0, scanBad // no header line is that long
		}
		return nil, 0, scanMore
	}
	return b[i : i+k], i + k + 2, scanDone
}

// respInt reads the decimal line at b[i] (a count, a length, an integer).
func respInt(b []byte, i int) (v int64, next int, st scanState) {
	line, next, st := respLine(b, i)
	if st != scanDone {
		return 0, 0, st
	}
	neg := len(line) > 0 && line[0] == '-'
	if neg {
		line = line[1:]
	}
	if len(line) == 0 || len(line) > 18 {
		return 0, 0, scanBad
	}
	for _, c := range line {
		if c < '0' || c > '9' {
			return 0, 0, scanBad
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, next, scanDone
}

// respString reads a simple (+) or bulk ($) string at b[i].
func respString(b []byte, i int) (s []byte, next int, st scanState) {
	if i >= len(b) {
		return nil, 0, scanMore
	}
	switch b[i] {
	case '+':
		return respLine(b, i+1)
	case '$':
		n, j, st := respInt(b, i+1)
		if st != scanDone {
			return nil, 0, st
		}
		if n < 0 || n > maxHello {
			return nil, 0, scanBad
		}
		end := j + int(n)
		if end+2 > len(b) {
			return nil, 0, scanMore
		}
		return b[j:end], end + 2, scanDone
	}
	return nil, 0, scanBad
}

// respSkip steps over the value at b[i], of any RESP2 or RESP3 type,
// nested at most 8 deep.
func respSkip(b []byte, i, depth int) (next int, st scanState) {
	if i >= len(b) {
		return 0, scanMore
	}
	if depth > 8 {
		return 0, scanBad
	}
	switch b[i] {
	case '+', '-', ':', '_', ',', '#', '(':
		_, next, st = respLine(b, i+1)
		return next, st
	case '$', '!', '=':
		n, j, st := respInt(b, i+1)
		if st != scanDone {
			return 0, st
		}
		if n < 0 {
			return j, scanDone // a null bulk string
		}
		if n > maxHello {
			return 0, scanBad
		}
		if j+int(n)+2 > len(b) {
			return 0, scanMore
		}
		return j + int(n) + 2, scanDone
	case '*', '~', '>', '%', '|':
		n, j, st := respInt(b, i+1)
		if st != scanDone {
			return 0, st
		}
		if b[i] == '%' || b[i] == '|' {
			n *= 2
		}
		for range max(n, 0) {
			if j, st = respSkip(b, j, depth+1); st != scanDone {
				return 0, st
			}
		}
		return j, scanDone
	}
	return 0, scanBad
}

// commandName returns the name of the first command in b, a request as
// go-redis writes it (an array of bulk strings), or nil when b does not
// start with one.
func commandName(b []byte) []byte {
	if len(b) == 0 || b[0] != '*' {
		return nil
	}
	_, i, st := respInt(b, 1)
	if st != scanDone {
		return nil
	}
	name, _, st := respString(b, i)
	if st != scanDone {
		return nil
	}
	return name
}
