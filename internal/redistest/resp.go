package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// replyError is an error reply (a "-" line) from the server.
type replyError string

func (e replyError) Error() string { return "redistest: server replied " + string(e) }

// doValue sends one command over a fresh connection and returns its whole
// RESP2 reply: a string (simple or bulk), an int64, nil (null bulk or
// array), a []any of those, or a replyError.
func doValue(addr string, args ...string) (any, error) {
	line, rd, done, err := do(addr, args)
	defer done()
	if err != nil {
		return nil, err
	}
	return parseValue(line, rd)
}

// parseValue parses the reply whose first line (without CRLF) is line and
// whose remainder, if any, rd holds.
func parseValue(line string, rd *bufio.Reader) (any, error) {
	if line == "" {
		return nil, errors.New("redistest: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, replyError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			l, err := rd.ReadString('\n')
			if err != nil {
				return nil, err
			}
			if out[i], err = parseValue(strings.TrimRight(l, "\r\n"), rd); err != nil {
				var re replyError
				if !errors.As(err, &re) {
					return nil, err
				}
				out[i] = re // an error inside an array is a value, not a failure
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redistest: unknown reply type %q", line)
}

// mustOK sends one command and fails tb unless the reply is +OK.
func mustOK(tb testing.TB, addr string, args ...string) {
	tb.Helper()
	if r, err := Do(addr, args...); err != nil || r != "+OK" {
		tb.Fatalf("redistest: %s on %s: %q, %v", strings.Join(args, " "), addr, r, err)
	}
}

// stringsOf converts a reply array of strings; ok is false when v is not one.
func stringsOf(v any) (out []string, ok bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// isMaster reports whether the server at addr answers ROLE with master.
func isMaster(addr string) bool {
	v, err := doValue(addr, "ROLE")
	role, _ := v.([]any)
	return err == nil && len(role) > 0 && role[0] == "master"
}
