package cachekit

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/names"
)

// MGetOrLoad returns the cached values of keys and, for the keys not
// cached, what one call of loader returns: it reads every key in one
// pipelined round trip (as MGet), calls loader once with the keys that
// missed, stores what it returned in one pipelined write (for
// Options.DefaultTTL, or the loader's OverrideTTL) and returns hits and
// loaded values together. A key the loader leaves out of its map is not
// found (as sturdyc's batch fetch treats it; a loader that fails for some
// keys returns an error instead): it is absent from the result, and
// nothing is cached for it unless Options.NegativeTTL is set, which caches
// it as a negative entry for NegativeTTL, so later calls neither ask the
// loader for it nor return it.
//
// Loads are single-flight per key, shared with GetOrLoad and other
// MGetOrLoad calls in this process: a missing key already being loaded is
// waited for, not passed to loader again (a load that completes between
// this call's read and its claim on the key is not seen: the key is loaded
// again). The loader runs with a ctx that keeps the first caller's values
// but not its cancellation, and ends at Options.LoadTimeout or Close; unlike
// a GetOrLoad load it is not cancelled when its callers give up, since
// other keys of the batch may still be waited for. A caller stops waiting
// when its own ctx ends (ctx.Err()) or at LoadTimeout. A loader error is
// returned and nothing it returned is cached; so is a Redis read error
// other than an entry that fails to open (such an entry is loaded afresh).
// With Redis (outside interop mode) the misses get leases, planted in one
// pipeline before the loader runs, and each loaded value is stored only
// while its key's lease holds, as GetOrLoadTTL says; a key found stored
// meanwhile is returned as it is, and a key under another Client's lease is
// loaded with the batch and returned without being stored (batches do not
// wait for other Clients' loads).
func MGetOrLoad[T any](ctx context.Context, c *Client, keys []string, loader func(ctx context.Context, missing []string) (map[string]T, error)) (map[string]T, error) {
	ctx, oc := c.obs.Begin(ctx, observe.OpMGetOrLoad, "", len(keys))
	out, r, err := mgetOrLoad(ctx, c, c.names.Locals(keys), names.Loader(c.names, keys, loader))
	err, r.LoaderFailed = flight.Unmark(err)
	c.obs.End(ctx, oc, r, err)
	return names.AppKeys(c.names, keys, out), err
}

func mgetOrLoad[T any](ctx context.Context, c *Client, keys []string, loader func(ctx context.Context, missing []string) (map[string]T, error)) (map[string]T, observe.Result, error) {
	var negs map[string]bool // keys found cached as "not found"
	if c.negTTL > 0 {
		negs = make(map[string]bool)
	}
	out, r, err := mgetAs[T](ctx, c, keys, negs)
	if err != nil && !onlyEntryErrors(err) {
		return nil, r, err
	}
	var missing []string
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if _, ok := out[k]; !ok && !seen[k] && !negs[k] {
			seen[k] = true
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return out, r, nil
	}
	if r.Out != observe.Degraded { // a FailOpen read's loads stay "degraded", as GetOrLoad's
		r.Out = observe.Loaded
	}
	joined := time.Now()
	lead, flights, batch := c.flights.Claim(ctx, c.bg, c.loadTimeout, missing)
	led := make(map[string]bool, len(lead))
	for _, k := range lead {
		led[k] = true
	}
	if len(lead) > 0 {
		go flight.Run(batch, func(ctx context.Context) (map[string]loaded[T], error) {
			return loadBatch(ctx, c, lead, loader)
		})
	}
	for i, f := range flights {
		// Until the flight ends, ctx ends, or the flight times out or is
		// cancelled by Close (as in GetOrLoad: even if the loader ignores
		// its ctx); an error leaves the flights not waited for yet.
		val, _, ferr := c.flights.Wait(ctx, missing[i], f, false)
		if ferr != nil && !errors.Is(ferr, ErrNotFound) {
			for j := i + 1; j < len(flights); j++ {
				c.flights.Leave(missing[j], flights[j])
			}
			return nil, observe.Result{}, c.loadErr(ctx, ferr)
		}
		res, isT := fromFlight[T](val)
		if ferr == nil && !res.at.IsZero() {
			if !led[missing[i]] && joined.After(res.at) {
				// Joined another caller's load after its value was last
				// known current, as GetOrLoad's joiners do: load again.
				k := missing[i]
				v, _, err := getOrLoad(ctx, c, k, c.defaultTTL, func(ctx context.Context) (T, error) {
					m, err := loader(ctx, []string{k})
					if v, ok := m[k]; ok || err != nil {
						return v, err
					}
					var zero T
					return zero, ErrNotFound
				})
				switch {
				case err == nil:
					out[k] = v
				case errors.Is(err, ErrNotFound):
				default:
					return nil, observe.Result{}, err
				}
				continue
			}
		}
		if ferr != nil || res.gone != nil { // the loader left the key out (gone: cached so)
			continue
		}
		if isT {
			out[missing[i]] = res.v
		} else if v, _, err := getInner[T](ctx, c, missing[i]); err == nil {
			out[missing[i]] = v // loaded by another caller as another type
		}
	}
	return out, r, nil
}

// loadBatch is one MGetOrLoad load of keys, read top to bottom as
// GetOrLoad's (loadKey): claim the keys (plant leases, or find what other
// loads stored), run the loader once for the keys to load, land the
// results, and hand each key's result to its flight.
func loadBatch[T any](ctx context.Context, c *Client, keys []string, loader func(context.Context, []string) (map[string]T, error)) (res map[string]loaded[T], err error) {
	var cl batchClaim[T]
	defer func() {
		if r := recover(); r != nil {
			cl.giveBack(ctx, c)
			err = flight.Panicked(r)
		}
	}()
	cl = claimBatch[T](ctx, c, keys)
	if len(cl.load) == 0 {
		return cl.prior, nil
	}
	vals, ttl, err := loadMany(ctx, c, cl.load, loader)
	return landBatch(ctx, c, cl, vals, ttl, err)
}

// onlyEntryErrors reports whether err is made only of *EntryError values
// (entries that failed to open or decode) and FailOpen's *MissError (keys
// Redis did not answer for), all of which MGetOrLoad loads afresh.
func onlyEntryErrors(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyEntryErrors(e) {
				return false
			}
		}
		return true
	}
	var ee *EntryError
	var me *MissError
	return errors.As(err, &ee) || errors.As(err, &me)
}
