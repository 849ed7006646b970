package redistest

import (
	"sync"
	"sync/atomic"
	"time"
)

// replyQueue is the reply side of a connection's delay (DelayReplies): the
// reply chunks held, forwarded to the client in order when due by one
// goroutine.
type replyQueue struct {
	delay   atomic.Int64
	mu      sync.Mutex
	held    []heldChunk
	running bool // the forwarding goroutine runs
}

// DelayReplies makes the proxy hold every chunk of reply bytes the server
// sends on the connections open now for d before it forwards it to the
// client, in order: Redis has run the command, the client does not know
// yet, and gives up when d is past its deadline. Requests pass at once.
// Connections opened later are not delayed; DelayReplies(0) ends the delay
// of the open ones (held chunks still go when due). A connection that ends
// drops the replies it still holds.
func (p *Proxy) DelayReplies(d time.Duration) {
	p.mu.Lock()
	conns := p.snapshot()
	p.mu.Unlock()
	for _, pc := range conns {
		pc.replies.delay.Store(int64(d))
	}
}

// delaying reports whether a reply chunk must queue: a delay is on, or
// chunks are held (a later chunk waits behind them, so the order holds).
func (q *replyQueue) delaying() bool {
	if q.delay.Load() > 0 {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running
}

// holdReply queues reply chunk b to go to the client after the delay.
func (pc *proxyConn) holdReply(b []byte) {
	q := &pc.replies
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held = append(q.held, heldChunk{b: append([]byte(nil), b...), due: time.Now().Add(time.Duration(q.delay.Load()))})
	if !q.running {
		q.running = true
		pc.p.wg.Add(1)
		go pc.forwardReplies()
	}
}

// forwardReplies writes the held reply chunks to the client when due.
func (pc *proxyConn) forwardReplies() {
	defer pc.p.wg.Done()
	q := &pc.replies
	for {
		q.mu.Lock()
		if len(q.held) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		c := q.held[0]
		q.held = q.held[1:]
		q.mu.Unlock()
		time.Sleep(time.Until(c.due))
		if _, err := pc.client.Write(c.b); err != nil {
			pc.end(false)
			return
		}
	}
}
