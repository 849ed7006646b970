package nemesis

// Clients in other processes. The parent runs the histories and keeps the
// source of truth; a child process serves one Client over its stdin and
// stdout, one line per message:
//
//	parent -> child   C <id> <ms> <op> [args]    a call (ms: its deadline, 0 none)
//	                  L <id> [k=v,...]           the source's values for a load of call id
//	child -> parent   R <id> ok [payload]        a call's result (miss, or err <text>)
//	                  Q <id> <k,...>             call id's loader reads the source
//
// Ops: get k, getorload k, mgetorload k,k..., set k v, delete k,
// setifabsent k v, stats. The parent times each call from before it sends
// it to after the reply arrives, so an operation's interval contains the
// child's.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Serve runs the calls read from in against c, each on its own goroutine,
// and writes the replies to out, until in ends; stats answers the "stats"
// call (nil: empty).
func Serve(c Client, in io.Reader, out io.Writer, stats func() string) error {
	var wmu sync.Mutex
	send := func(line string) {
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = io.WriteString(out, line+"\n")
	}
	var mu sync.Mutex
	loads := map[string]chan string{} // by call id, a load waiting for the source
	var wg sync.WaitGroup
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "L":
			mu.Lock()
			ch := loads[f[1]]
			mu.Unlock()
			if ch != nil {
				ch <- strings.Join(f[2:], "")
			}
		case len(f) >= 4 && f[0] == "C":
			id := f[1]
			load := func(ctx context.Context, keys []string) (map[string]int, error) {
				ch := make(chan string, 1)
				mu.Lock()
				loads[id] = ch
				mu.Unlock()
				defer func() { mu.Lock(); delete(loads, id); mu.Unlock() }()
				send("Q " + id + " " + strings.Join(keys, ","))
				select {
				case p := <-ch:
					return decodeValues(p)
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			wg.Go(func() { send("R " + id + " " + serveCall(c, f[2], f[3], f[4:], load, stats)) })
		}
	}
	wg.Wait()
	return sc.Err()
}

// serveCall runs one call and returns its result: ok [payload], miss, or
// err <text>.
func serveCall(c Client, ms, op string, args []string, load func(context.Context, []string) (map[string]int, error), stats func() string) string {
	ctx := context.Background()
	if n, _ := strconv.Atoi(ms); n > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Millisecond)
		defer cancel()
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	v, _ := strconv.Atoi(arg(1))
	var payload string
	var err error
	switch op {
	case "get":
		var got int
		var found bool
		if got, found, err = c.Get(ctx, arg(0)); err == nil && !found {
			return "miss"
		}
		payload = strconv.Itoa(got)
	case "getorload":
		var got int
		got, err = c.GetOrLoad(ctx, arg(0), func(ctx context.Context) (int, error) {
			m, err := load(ctx, []string{arg(0)})
			return m[arg(0)], err
		})
		payload = strconv.Itoa(got)
	case "mgetorload":
		var m map[string]int
		m, err = c.MGetOrLoad(ctx, strings.Split(arg(0), ","), load)
		payload = encodeValues(m)
	case "set":
		err = c.Set(ctx, arg(0), v)
	case "delete":
		err = c.Delete(ctx, arg(0))
	case "setifabsent":
		var stored bool
		stored, err = c.SetIfAbsent(ctx, arg(0), v)
		payload = strconv.FormatBool(stored)
	case "stats":
		if stats != nil {
			payload = stats()
		}
	default:
		err = fmt.Errorf("nemesis: unknown op %q", op)
	}
	if err != nil {
		return "err " + strings.Join(strings.Fields(err.Error()), " ")
	}
	return "ok " + payload
}

func encodeValues(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+strconv.Itoa(v))
	}
	return strings.Join(parts, ",")
}

func decodeValues(p string) (map[string]int, error) {
	m := map[string]int{}
	if p == "" {
		return m, nil
	}
	for kv := range strings.SplitSeq(p, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("nemesis: bad values %q", p)
		}
		m[k] = n
	}
	return m, nil
}

// Remote is a Client served by a child process (Serve).
type Remote struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	wmu sync.Mutex

	mu    sync.Mutex
	seq   int
	calls map[string]*call
	gone  chan struct{} // closed when the child's output ends
}

// call is a call sent and not answered yet.
type call struct {
	reply chan string
	load  func(context.Context, []string) (map[string]int, error)
}

// errChildGone is the error of a call to a child whose output ended.
var errChildGone = errors.New("nemesis: the child process is gone")

// StartRemote starts cmd, a process that Serves a Client on its stdin and
// stdout (its stderr goes to this process's unless set), and returns that
// Client. Close ends it.
func StartRemote(cmd *exec.Cmd) (*Remote, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &Remote{cmd: cmd, in: in, calls: map[string]*call{}, gone: make(chan struct{})}
	go r.read(out)
	return r, nil
}

// read dispatches the child's lines until its output ends.
func (r *Remote) read(out io.Reader) {
	defer close(r.gone)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		id, rest, _ := strings.Cut(rest, " ")
		r.mu.Lock()
		c := r.calls[id]
		if kind == "R" {
			delete(r.calls, id)
		}
		r.mu.Unlock()
		switch {
		case c == nil:
		case kind == "R":
			c.reply <- rest
		case kind == "Q":
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				m, _ := c.load(ctx, strings.Split(rest, ","))
				r.send("L " + id + " " + encodeValues(m))
			}()
		}
	}
}

func (r *Remote) send(line string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_, _ = io.WriteString(r.in, line+"\n")
}

// do sends a call and returns its result's payload; found is false for a
// miss. A call whose ctx ends is abandoned (the child still answers its
// loads).
func (r *Remote) do(ctx context.Context, load func(context.Context, []string) (map[string]int, error), op string, args ...string) (payload string, found bool, err error) {
	ms := int64(0)
	if dl, ok := ctx.Deadline(); ok {
		ms = max(1, time.Until(dl).Milliseconds())
	}
	c := &call{reply: make(chan string, 1), load: load}
	r.mu.Lock()
	r.seq++
	id := strconv.Itoa(r.seq)
	r.calls[id] = c
	r.mu.Unlock()
	r.send(strings.Join(append([]string{"C", id, strconv.FormatInt(ms, 10), op}, args...), " "))
	select {
	case res := <-c.reply:
		status, payload, _ := strings.Cut(res, " ")
		switch status {
		case "ok":
			return payload, true, nil
		case "miss":
			return "", false, nil
		default:
			return "", false, errors.New(payload)
		}
	case <-ctx.Done():
		return "", false, ctx.Err()
	case <-r.gone:
		return "", false, errChildGone
	}
}

// Get implements Client.
func (r *Remote) Get(ctx context.Context, key string) (int, bool, error) {
	p, found, err := r.do(ctx, nil, "get", key)
	if err != nil || !found {
		return 0, false, err
	}
	v, err := strconv.Atoi(p)
	return v, err == nil, err
}

// GetOrLoad implements Client.
func (r *Remote) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	p, _, err := r.do(ctx, func(ctx context.Context, _ []string) (map[string]int, error) {
		v, err := load(ctx)
		return map[string]int{key: v}, err
	}, "getorload", key)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(p)
}

// MGetOrLoad implements Client.
func (r *Remote) MGetOrLoad(ctx context.Context, keys []string, load func(context.Context, []string) (map[string]int, error)) (map[string]int, error) {
	p, _, err := r.do(ctx, load, "mgetorload", strings.Join(keys, ","))
	if err != nil {
		return nil, err
	}
	return decodeValues(p)
}

// Set implements Client.
func (r *Remote) Set(ctx context.Context, key string, v int) error {
	_, _, err := r.do(ctx, nil, "set", key, strconv.Itoa(v))
	return err
}

// Delete implements Client.
func (r *Remote) Delete(ctx context.Context, key string) error {
	_, _, err := r.do(ctx, nil, "delete", key)
	return err
}

// SetIfAbsent implements Client.
func (r *Remote) SetIfAbsent(ctx context.Context, key string, v int) (bool, error) {
	p, _, err := r.do(ctx, nil, "setifabsent", key, strconv.Itoa(v))
	return p == "true", err
}

// Stats returns what the child's stats function says.
func (r *Remote) Stats(ctx context.Context) (string, error) {
	p, _, err := r.do(ctx, nil, "stats")
	return p, err
}

// Close ends the child: its stdin closes, Serve returns once its calls
// have, and the process exits; after 10 s it is killed.
func (r *Remote) Close() error {
	_ = r.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
		_ = r.cmd.Process.Kill()
		return <-exited
	}
}
