package l2

// A master's stream on a cluster: natural batching, no timer. go-redis's
// AutoPipeliner, after a batch, waits for as many commands as the batch
// held (its callers' next ones) before sending the next, up to a silence
// gap of 200 µs that the Go runtime rounds to a millisecond when little
// else runs. On one server those callers come back to it; on a cluster
// they go to any master, so a master's pipeliner kept waiting for
// commands sent elsewhere: at 16 callers on 3 masters, per-master
// pipeliners served 0.62-0.65x the rate of the cluster-wide one, and with
// a fixed 50 µs window (MaxFlushDelay) 4 callers of one master served a
// tenth of their rate. The batcher sends what was queued while the
// previous batch was in flight, as soon as that batch is answered: a
// caller alone waits one round trip, and many callers share it.
//
// The batches go through the master's own client (Pipelined): its hooks
// (the fence, the drop of abandoned commands) see each, and its read and
// write timeouts bound it.

import (
	"context"
	"runtime"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batcher is one master's ordered stream of batches.
type batcher struct {
	client *redis.Client
	// maxCmds and maxBytes bound one pipeline (a longer queue goes as
	// several, one after the other).
	maxCmds, maxBytes int

	mu      sync.Mutex
	queue   []redis.Cmder
	next    *batchDone // the batch the queued commands go with
	running bool       // a goroutine is sending batches
}

// batchDone is closed once every command of its batch has its reply (or
// error).
type batchDone struct{ done chan struct{} }

// submit queues cmds, in order, behind every command queued before, and
// returns the batch they go with.
func (b *batcher) submit(cmds []redis.Cmder) *batchDone {
	b.mu.Lock()
	b.queue = append(b.queue, cmds...)
	bd := b.next
	if bd == nil {
		bd = &batchDone{done: make(chan struct{})}
		b.next = bd
	}
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.run()
	}
	return bd
}

// run sends the queue as batches, one at a time, until it is empty.
func (b *batcher) run() {
	var spare []redis.Cmder
	for {
		b.mu.Lock()
		cmds, bd := b.queue, b.next
		if len(cmds) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.queue, b.next = spare[:0], nil
		b.mu.Unlock()
		b.send(cmds)
		close(bd.done)
		clear(cmds)
		spare = cmds
		// Let the callers this batch woke run first: most send their
		// next command at once, and it joins the next batch instead of
		// following it one round trip later (measured: 1.5x the rate at
		// 16 and 128 callers).
		runtime.Gosched()
	}
}

// send runs cmds as pipelines of at most maxCmds commands and about
// maxBytes bytes of arguments, in order.
func (b *batcher) send(cmds []redis.Cmder) {
	ctx := context.Background()
	for len(cmds) > 0 {
		n, bytes := 0, 0
		for n < len(cmds) && n < b.maxCmds {
			bytes += argBytes(cmds[n].Args())
			if n > 0 && bytes > b.maxBytes {
				break
			}
			n++
		}
		chunk := cmds[:n]
		cmds = cmds[n:]
		if len(chunk) == 1 {
			_ = b.client.Process(ctx, chunk[0])
			continue
		}
		_, _ = b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range chunk {
				_ = p.Process(ctx, c)
			}
			return nil
		})
	}
}
