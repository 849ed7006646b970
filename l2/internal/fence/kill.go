package fence

// One try of a kill, and the killer connection it runs on.
//
// Which commands a server has: CLIENT KILL with filters (ID, ADDR) since
// Redis 2.8.12, CLIENT ID since 5.0, HELLO (the connection's ID at its
// handshake) since 6.0, CLIENT INFO and CLIENT LIST ID since 6.2. Redis 6.0
// answers the last two with "ERR Unknown subcommand ..." and "ERR syntax
// error": the whole CLIENT LIST, which every version has, stands in for
// them.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// tryKill asks the server whether connection id is still c and kills it.
// It returns nil when c is dead now (killed, found gone, or gone with a
// restart of the server); an error reply (answered) when the server
// answered CLIENT KILL with one; any other error when the server did not
// answer. The killer k was dialed after c failed.
//
// A server that restarted since c was made gives its IDs anew, and id may
// now name another connection (this Store's next one, held at the gate,
// or another client's): that one must not be killed. Where k's own entry
// shows the address k dialed from (a direct path, no proxy or NAT
// between), the server's IDs are its own and only grow: an ID of k's
// below c's is a restart, and the kill is filtered by c's own address too
// (CLIENT KILL ID id ADDR addr), so it reaches c or nothing. Elsewhere no
// restart is inferred from IDs (a proxy's need not grow); c's entry is
// looked up, and id killed unless that entry is gone or younger than c.
func (g *gate) tryKill(ctx context.Context, k *killer, c *fconn, id int64) error {
	sid := strconv.FormatInt(id, 10)
	v := view{k: k}
	me, err := v.self(ctx)
	if err != nil && !answered(err) {
		return err
	}
	if addr, _ := clientField(me, "addr"); addr != "" && addr == k.local() && c.local != "" {
		if own, ok := clientField(me, "id"); ok {
			if n, perr := strconv.ParseInt(own, 10, 64); perr == nil && n < id {
				return nil // restarted: c died with the server
			}
		}
		return k.Do(ctx, "client", "kill", "id", sid, "addr", c.local).Err()
	}
	entry, err := v.entry(ctx, sid)
	switch {
	case err != nil && !answered(err):
		return err
	case err == nil && entry == "":
		return nil // gone already
	case err == nil:
		if age, ok := clientField(entry, "age"); ok {
			if n, perr := strconv.ParseInt(age, 10, 64); perr == nil && n+2 < int64(time.Since(c.born)/time.Second) {
				return nil // a younger connection: the server restarted since c was made
			}
		}
	}
	return k.Do(ctx, "client", "kill", "id", sid).Err()
}

// view is what one try learns of the server's clients, asked at most once
// each.
type view struct {
	k    *killer
	list *string // the whole CLIENT LIST, once read
}

// self returns k's own entry: CLIENT INFO, or before Redis 6.2 CLIENT ID
// and that line of CLIENT LIST. An error reply to either leaves it empty
// (the error returned is the last reply).
func (v *view) self(ctx context.Context) (string, error) {
	info, err := v.k.Do(ctx, "client", "info").Text()
	if err == nil || !answered(err) {
		return info, err
	}
	id, err := v.k.Do(ctx, "client", "id").Int64()
	if err != nil {
		return "", err
	}
	return v.line(ctx, strconv.FormatInt(id, 10))
}

// entry returns the entry of connection sid ("" when there is none):
// CLIENT LIST ID, or before Redis 6.2 that line of CLIENT LIST.
func (v *view) entry(ctx context.Context, sid string) (string, error) {
	info, err := v.k.Do(ctx, "client", "list", "id", sid).Text()
	if err == nil {
		return strings.TrimSpace(info), nil
	}
	if !answered(err) {
		return "", err
	}
	return v.line(ctx, sid)
}

// line returns the line of CLIENT LIST whose id is sid ("" when none).
func (v *view) line(ctx context.Context, sid string) (string, error) {
	if v.list == nil {
		all, err := v.k.Do(ctx, "client", "list").Text()
		if err != nil {
			return "", err
		}
		v.list = &all
	}
	for l := range strings.Lines(*v.list) {
		if id, _ := clientField(l, "id"); id == sid {
			return strings.TrimSpace(l), nil
		}
	}
	return "", nil
}

// clientField reads one name=value field of a CLIENT LIST or CLIENT INFO
// line.
func clientField(info, name string) (string, bool) {
	for f := range strings.FieldsSeq(info) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// killer is a connection of a gate's own to its server: a client without
// the fence's hook (its writes never wait on the gate), logged in as the
// node's client is, dialing the server's exact address.
type killer struct {
	*redis.Client
	addr   atomic.Pointer[string] // its connection's local address
	dials  *atomic.Uint64         // the Fencer's count of killer dials
	dialed atomic.Bool            // it dialed once: it never dials again
}

// errDialedOnce is a killer's refusal to dial a second time: go-redis may
// dial again within one command when a fresh connection breaks during its
// handshake; the kill loop dials a new killer instead, at its own pace.
var errDialedOnce = errors.New("l2: a killer dials once")

// local returns the killer connection's local address ("" before it is
// dialed).
func (k *killer) local() string {
	if a := k.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// DialHook implements redis.Hook: it dials once, counts the dial and
// notes the local address.
func (k *killer) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if k.dialed.Swap(true) {
			return nil, errDialedOnce
		}
		k.dials.Add(1)
		conn, err := next(ctx, network, addr)
		if err == nil && conn != nil {
			a := conn.LocalAddr().String()
			k.addr.Store(&a)
		}
		return conn, err
	}
}

// ProcessHook implements redis.Hook.
func (*killer) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (*killer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// killer makes the gate's killer; it dials at its first command.
func (g *gate) killer() *killer {
	o := g.opts
	ko := &redis.Options{
		Network: g.network, Addr: g.addr,
		Username: o.Username, Password: o.Password,
		CredentialsProvider: o.CredentialsProvider, CredentialsProviderContext: o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		AuthEmptyPassword:            o.AuthEmptyPassword,
		Protocol:                     o.Protocol,
		DialTimeout:                  killTimeout, ReadTimeout: killTimeout, WriteTimeout: killTimeout,
		PoolSize: 1, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if o.TLSConfig != nil {
		ko.TLSConfig = o.TLSConfig.Clone()
	}
	k := &killer{Client: redis.NewClient(ko), dials: &g.f.dials}
	k.AddHook(k)
	return k
}
