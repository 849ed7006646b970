package l2

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Publish sends each message in msgs on channel, in one pipelined round
// trip when there are several. Pub/sub delivery is fire-and-forget: a nil
// error means Redis accepted the messages, not that anyone received them.
func (s *Store) Publish(ctx context.Context, channel string, msgs ...[]byte) error {
	if err := s.check("publish"); err != nil {
		return err
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return fail("publish", s.rdb.Publish(ctx, channel, msgs[0]).Err())
	}
	cmds := make([]*redis.IntCmd, len(msgs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			cmds[i] = p.Publish(ctx, channel, m)
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fail("publish", err)
		}
	}
	return nil
}

// SetPublish stores val under key like Set and then publishes msg on
// channel. On a standalone or failover client both commands travel in one
// pipelined round trip; on a cluster client they are sent one after the
// other. A failed SET is reported as a *BackendError with Op "set" (and
// nothing is published); a SET that succeeded followed by a failed PUBLISH
// is reported with Op "publish", so callers can tell the value was stored.
func (s *Store) SetPublish(ctx context.Context, key string, val []byte, ttl time.Duration, channel string, msg []byte) error {
	if err := s.check("set"); err != nil {
		return err
	}
	if ttl <= 0 {
		return ErrInvalidTTL
	}
	set := setCmd(ctx, key, val, ttl)
	if s.cluster != nil {
		_ = s.rdb.Process(ctx, set)
		if err := set.Err(); err != nil {
			return fail("set", err, key)
		}
		return fail("publish", s.rdb.Publish(ctx, channel, msg).Err())
	}
	var pub *redis.IntCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		_ = p.Process(ctx, set)
		pub = p.Publish(ctx, channel, msg)
		return nil
	})
	if err := set.Err(); err != nil {
		return fail("set", err, key)
	}
	return fail("publish", pub.Err())
}

// DeletePublish removes key like Delete and then publishes msg on channel,
// in one round trip on a standalone client. It returns whether the key
// existed. Errors are reported as for SetPublish, with Op "del" or
// "publish".
func (s *Store) DeletePublish(ctx context.Context, key, channel string, msg []byte) (bool, error) {
	if err := s.check("del"); err != nil {
		return false, err
	}
	if s.cluster != nil {
		n, err := s.rdb.Del(ctx, key).Result()
		if err != nil {
			return false, fail("del", err, key)
		}
		return n > 0, fail("publish", s.rdb.Publish(ctx, channel, msg).Err())
	}
	var del, pub *redis.IntCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, key)
		pub = p.Publish(ctx, channel, msg)
		return nil
	})
	n, err := del.Result()
	if err != nil {
		return false, fail("del", err, key)
	}
	return n > 0, fail("publish", pub.Err())
}

// SubscriptionHandler receives what a Subscription sees. Every function is
// optional and called from the subscription's single goroutine, one call
// at a time.
type SubscriptionHandler struct {
	// Message receives the payload of each message published on the
	// channel. The slice is the handler's to keep.
	Message func(payload []byte)
	// Lost is called once when the connection carrying the subscription
	// fails (Redis restarted, network error). err is a *BackendError.
	Lost func(err error)
	// Resubscribed is called when the subscription is in place again after
	// a loss, or for the first time when the initial attempt failed.
	// Messages published in between were missed.
	Resubscribed func()
}

// Subscription is a live SUBSCRIBE to one channel, kept up by a background
// goroutine that reconnects with backoff. Stop it with Close.
type Subscription struct {
	ps      *redis.PubSub
	cancel  context.CancelFunc
	done    chan struct{}
	ready   chan struct{}
	once    sync.Once
	readyOk sync.Once
}

// Subscription timing: how long one Receive may wait before the connection
// is checked with a PING, and the reconnect backoff bounds.
const (
	subIdle       = 30 * time.Second
	subBackoffMin = 20 * time.Millisecond
	subBackoffMax = time.Second
)

// Subscribe subscribes to channel and delivers to h until Close. It
// returns at once; Ready is closed once the first subscription is
// confirmed. A Store built around a cluster client subscribes on one
// node, which receives every node's PUBLISH (classic pub/sub is
// cluster-wide).
func (s *Store) Subscribe(channel string, h SubscriptionHandler) (*Subscription, error) {
	if err := s.check("subscribe"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sub := &Subscription{
		ps:     s.rdb.Subscribe(ctx), // no channel yet: the loop subscribes
		cancel: cancel,
		done:   make(chan struct{}),
		ready:  make(chan struct{}),
	}
	go sub.run(ctx, channel, h)
	return sub, nil
}

// Ready is closed once the subscription has been confirmed by Redis for
// the first time.
func (sub *Subscription) Ready() <-chan struct{} { return sub.ready }

// Close stops the subscription and waits for its goroutine to end. It is
// idempotent and returns nil.
func (sub *Subscription) Close() error {
	sub.once.Do(func() {
		sub.cancel()
		_ = sub.ps.Close()
		<-sub.done
	})
	return nil
}

func (sub *Subscription) run(ctx context.Context, channel string, h SubscriptionHandler) {
	defer close(sub.done)
	lost := false // a failure happened since the last confirmation
	confirmed := false
	backoff := subBackoffMin
	subscribed := false
	for ctx.Err() == nil {
		if !subscribed {
			// Subscribe sends SUBSCRIBE on a (new) connection; go-redis
			// remembers the channel and resubscribes on every reconnect.
			if err := sub.ps.Subscribe(ctx, channel); err != nil {
				if !sub.pause(ctx, &backoff, &lost, err, h) {
					return
				}
				continue
			}
			subscribed = true
		}
		msg, err := sub.ps.ReceiveTimeout(ctx, subIdle)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
				if perr := sub.ps.Ping(ctx); perr == nil {
					continue // idle but alive
				}
			}
			if !sub.pause(ctx, &backoff, &lost, err, h) {
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			backoff = subBackoffMin
			if lost || !confirmed {
				if lost && h.Resubscribed != nil {
					h.Resubscribed()
				}
				lost = false
			}
			if !confirmed {
				confirmed = true
				sub.readyOk.Do(func() { close(sub.ready) })
			}
		case *redis.Message:
			if h.Message != nil {
				h.Message([]byte(m.Payload))
			}
		}
	}
}

// pause records a failure, reports the loss once, and sleeps the backoff.
// It returns false when the subscription is being closed.
func (sub *Subscription) pause(ctx context.Context, backoff *time.Duration, lost *bool, err error, h SubscriptionHandler) bool {
	if ctx.Err() != nil {
		return false
	}
	if !*lost {
		*lost = true
		if h.Lost != nil {
			h.Lost(fail("subscribe", err))
		}
	}
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(*backoff*2, subBackoffMax)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
