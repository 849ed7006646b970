package redistest

import (
	"bufio"
	"bytes"
	"strings"
)

// answerRule is a request the proxy answers itself (Answer).
type answerRule struct {
	prefix []string // the request's first words, lower case
	reply  []byte   // the whole RESP reply, CRLF included
}

// Answer makes the proxy answer, itself and at once, every request whose
// first words are prefix (case-insensitive: "client", "info"), with reply,
// one RESP line without its CRLF ("-ERR syntax error"), instead of
// forwarding it: the replies of a server version or service the test
// cannot run (Redis 6.0's to commands 6.2 added). A rule applies to a read
// chunk that holds exactly one request, so to a client that sends one
// command and waits for its reply (as a fence's killer does); rules added
// later are tried first.
func (p *Proxy) Answer(reply string, prefix ...string) {
	r := answerRule{reply: []byte(reply + "\r\n")}
	for _, w := range prefix {
		r.prefix = append(r.prefix, strings.ToLower(w))
	}
	p.mu.Lock()
	p.answers = append([]answerRule{r}, p.answers...)
	p.mu.Unlock()
}

// Answered counts the requests the proxy answered itself (Answer).
func (p *Proxy) Answered() int64 { return p.answered.Load() }

// Accepted counts the connections the proxy has accepted (dials that
// reached it, whatever became of them).
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// answerFor returns the reply to the request chunk b, or nil when no rule
// answers it.
func (p *Proxy) answerFor(b []byte) []byte {
	p.mu.Lock()
	rules := p.answers
	p.mu.Unlock()
	if len(rules) == 0 || len(b) == 0 || b[0] != '*' {
		return nil
	}
	rd := bufio.NewReader(bytes.NewReader(b))
	args, err := readCommand(rd)
	if err != nil || rd.Buffered() != 0 {
		return nil
	}
	for _, r := range rules {
		if len(args) < len(r.prefix) {
			continue
		}
		match := true
		for i, w := range r.prefix {
			if strings.ToLower(args[i]) != w {
				match = false
				break
			}
		}
		if match {
			p.answered.Add(1)
			return r.reply
		}
	}
	return nil
}
