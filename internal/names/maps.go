package names

import "context"

// The batch calls take and return the application's keys while everything
// below them works on local names: these map between the two. Each is the
// identity (returning its argument itself) on a nil Namer.

// Locals maps keys to their local names.
func (n *Namer) Locals(keys []string) []string {
	if n == nil {
		return keys
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = n.Local(k)
	}
	return out
}

// LocalItems re-keys items by their keys' local names.
func LocalItems[V any](n *Namer, items map[string]V) map[string]V {
	if n == nil {
		return items
	}
	out := make(map[string]V, len(items))
	for k, v := range items {
		out[n.Local(k)] = v
	}
	return out
}

// AppKeys re-keys m, keyed by the local names of keys, by keys.
func AppKeys[V any](n *Namer, keys []string, m map[string]V) map[string]V {
	if n == nil || m == nil {
		return m
	}
	out := make(map[string]V, len(m))
	for _, k := range keys {
		if v, ok := m[n.Local(k)]; ok {
			out[k] = v
		}
	}
	return out
}

// Loader wraps a batch loader that takes and returns the application's
// keys (of keys) into one that takes and returns their local names.
func Loader[T any](n *Namer, keys []string, loader func(context.Context, []string) (map[string]T, error)) func(context.Context, []string) (map[string]T, error) {
	if n == nil {
		return loader
	}
	app := make(map[string]string, len(keys))
	for _, k := range keys {
		app[n.Local(k)] = k
	}
	return func(ctx context.Context, missing []string) (map[string]T, error) {
		asked := make([]string, len(missing))
		for i, l := range missing {
			asked[i] = app[l]
		}
		m, err := loader(ctx, asked)
		return LocalItems(n, m), err
	}
}
