package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// binPath is the tool built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cachekit-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdtemp:", err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "cachekit")
	build := exec.Command("go", "build", "-o", binPath, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/cachekit: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Fixed test keys (never real secrets). testKeyHex is the current key,
// oldKeyHex a retired one, otherKeyHex a key the reader does not hold.
const (
	testKeyHex  = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	oldKeyHex   = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
	otherKeyHex = "abababababababababababababababababababababababababababababababab"
)

// result is one run of the tool.
type result struct {
	code           int
	stdout, stderr string
}

// tool runs one command line in-process, through run, with an environment
// made only of env ("NAME=value" pairs): what main does, minus os.Exit.
func tool(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return toolStdin(t, env, "", args...)
}

func toolStdin(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	code, out, errOut := runWith(env, stdin, args...)
	return result{code: code, stdout: out, stderr: errOut}
}

// runWith runs one command line in-process with env (KEY=VALUE pairs) and
// stdin, and returns its exit code, stdout and stderr.
func runWith(env []string, stdin string, args ...string) (int, string, string) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var out, errb bytes.Buffer
	code := run(args, func(k string) string { return vars[k] }, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// toolBin runs the built binary with args and an environment made only of
// the process's non-CacheKit variables plus env: the exit-code tests use it
// to check what a shell sees.
func toolBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	stdin := ""
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CACHEKIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running the tool: %v", err)
	}
	return r
}

// want checks the exit code and, for failures, that stderr is exactly one
// line starting "cachekit: "; for successes, that stderr is empty.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if code == exitOK {
		for _, l := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			if l != "" && !strings.HasPrefix(l, "cachekit: warning: ") {
				t.Fatalf("stderr on success (only warnings allowed): %q", r.stderr)
			}
		}
		return r
	}
	if !strings.HasPrefix(r.stderr, "cachekit: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Fatalf("stderr is not one 'cachekit: ' line: %q", r.stderr)
	}
	return r
}

// line returns stdout without its final newline.
func (r result) line() string { return strings.TrimSuffix(r.stdout, "\n") }

// stack is one redis-server, or a cluster, with the environment that points
// the tool at it.
type stack struct {
	srv *redistest.Server // nil for a cluster
	rdb redis.UniversalClient
	env []string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &stack{srv: srv, rdb: rdb, env: []string{"CACHEKIT_REDIS_URL=" + srv.URL()}}
}

// newClusterStack starts a three-master cluster; the tool reaches it
// through one redis+cluster:// URL.
func newClusterStack(t *testing.T) (*stack, *redistest.Cluster) {
	t.Helper()
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	return &stack{rdb: rdb, env: []string{"CACHEKIT_REDIS_URL=" + cl.URL()}}, cl
}

// with returns the stack's environment plus extra pairs.
func (s *stack) with(extra ...string) []string {
	return append(append([]string(nil), s.env...), extra...)
}

// raw reads a key's stored bytes straight from Redis.
func (s *stack) raw(t *testing.T, key string) []byte {
	t.Helper()
	b, err := s.rdb.Get(context.Background(), key).Bytes()
	if err != nil {
		t.Fatalf("raw GET: %v", err)
	}
	return b
}

// put writes stored bytes straight to Redis.
func (s *stack) put(t *testing.T, key string, b []byte) {
	t.Helper()
	if err := s.rdb.Set(context.Background(), key, b, time.Hour).Err(); err != nil {
		t.Fatalf("raw SET: %v", err)
	}
}

// mustNotLeak fails when output holds key material or a given secret value.
func mustNotLeak(t *testing.T, r result, secrets ...string) {
	t.Helper()
	all := r.stdout + r.stderr
	for _, s := range append([]string{testKeyHex, oldKeyHex, otherKeyHex}, secrets...) {
		if s != "" && strings.Contains(strings.ToLower(all), strings.ToLower(s)) {
			t.Fatalf("output contains a secret or a value it must not print")
		}
	}
}
