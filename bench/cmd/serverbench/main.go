// Command serverbench measures what synchronous encryption work does to a
// Go HTTP server: the Go counterpart of the Node.js "recrypt server"
// benchmark. It starts a server in a child process whose /set stores a
// large encrypted value through a cachekit Client (L1 + Redis), sends
// --requests sets at --concurrency, and pings /ping every --ping-interval
// the whole time. It reports wall time, sets/s, set p50/p95, pings
// answered, ping p50/p99/max, the server's largest GC pause and GC
// stop-the-world latency (runtime/metrics), its peak heap and its CPU
// utilisation.
//
// --mode chooses the library's path for large values: "chunked" (the
// default, the library's own: bounded pieces, bounded concurrency),
// "oneshot" (every copy, hash, AES-GCM call and LZ4 decode in one call, no
// bound: how the library worked before), or "both", which runs the two
// back to back and prints them side by side, one column each.
//
//	go run ./cmd/serverbench --value-size 64MiB --mode both
//
// Redis: CACHEKIT_REDIS_URL when set, else a private redis-server.
// CACHEKIT_SERVERBENCH_CHILD_TRACE=FILE makes the server write a runtime
// execution trace (go tool trace FILE): where a goroutine ran long without
// a preemption point shows there.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cachekit-io/cachekit-go/bench/internal/redisserver"
)

// childEnv marks the re-executed binary as the server.
const childEnv = "CACHEKIT_SERVERBENCH_CHILD"

// The library paths --mode chooses between.
const (
	modeChunked = "chunked"
	modeOneShot = "oneshot"
	modeBoth    = "both"
)

type options struct {
	valueSize    int
	requests     int
	concurrency  int
	pingInterval time.Duration
	mode         string
	json         bool
}

// sizeFlag parses sizes such as 8388608, 8MiB, 64MiB, 512KiB.
type sizeFlag struct{ n *int }

func (s sizeFlag) String() string {
	if s.n == nil {
		return ""
	}
	return strconv.Itoa(*s.n)
}

func (s sizeFlag) Set(v string) error {
	mult := 1
	for suf, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(v, suf) {
			v, mult = strings.TrimSuffix(v, suf), m
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > (1<<30)/mult {
		return errors.New("want a positive size such as 8MiB")
	}
	*s.n = n * mult
	return nil
}

func main() {
	if os.Getenv(childEnv) == "1" {
		size, _ := strconv.Atoi(os.Getenv(childEnv + "_SIZE"))
		if err := runChild(os.Getenv(childEnv+"_REDIS"), size, os.Getenv(childEnv+"_MODE")); err != nil {
			fmt.Fprintln(os.Stderr, "serverbench child:", err)
			os.Exit(1)
		}
		return
	}
	o := options{valueSize: 8 << 20}
	flag.Var(sizeFlag{&o.valueSize}, "value-size", "size of the value each /set stores (e.g. 8MiB, 64MiB)")
	flag.IntVar(&o.requests, "requests", 16, "number of /set requests")
	flag.IntVar(&o.concurrency, "concurrency", 4, "concurrent /set requests")
	flag.DurationVar(&o.pingInterval, "ping-interval", 10*time.Millisecond, "interval between pings")
	flag.StringVar(&o.mode, "mode", modeChunked, "large-value path: chunked (the library's), oneshot, or both side by side")
	flag.BoolVar(&o.json, "json", false, "print the results as JSON (an array, one object per mode)")
	flag.Parse()
	if o.requests < 1 || o.concurrency < 1 || o.pingInterval <= 0 {
		fmt.Fprintln(os.Stderr, "serverbench: --requests, --concurrency and --ping-interval must be positive")
		os.Exit(2)
	}
	modes := map[string][]string{modeChunked: {modeChunked}, modeOneShot: {modeOneShot}, modeBoth: {modeOneShot, modeChunked}}[o.mode]
	if modes == nil {
		fmt.Fprintln(os.Stderr, "serverbench: --mode must be chunked, oneshot or both")
		os.Exit(2)
	}
	var results []result
	for _, m := range modes {
		res, err := run(o, m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "serverbench (%s): %v\n", m, err)
			os.Exit(1)
		}
		results = append(results, res)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return
	}
	printResults(os.Stdout, results)
}

// result is one serverbench run.
type result struct {
	Mode            string  `json:"mode"`
	ValueSize       int     `json:"value_size"`
	Requests        int     `json:"requests"`
	Concurrency     int     `json:"concurrency"`
	PingIntervalMs  float64 `json:"ping_interval_ms"`
	WallSeconds     float64 `json:"wall_seconds"`
	SetsPerSecond   float64 `json:"sets_per_second"`
	SetP50Ms        float64 `json:"set_p50_ms"`
	SetP95Ms        float64 `json:"set_p95_ms"`
	PingsAnswered   int     `json:"pings_answered"`
	PingP50Ms       float64 `json:"ping_p50_ms"`
	PingP99Ms       float64 `json:"ping_p99_ms"`
	PingMaxMs       float64 `json:"ping_max_ms"`
	MaxGCPauseMs    float64 `json:"max_gc_pause_ms"`
	MaxGCStoppingMs float64 `json:"max_gc_stopping_ms"`
	GCCycles        uint64  `json:"gc_cycles"`
	PeakHeapMiB     float64 `json:"peak_heap_mib"`
	CPUCores        float64 `json:"cpu_cores"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
}

// printResults prints one column per result, rows as the recrypt
// benchmark's table has them.
func printResults(w io.Writer, rs []result) {
	r0 := rs[0]
	fmt.Fprintf(w, "serverbench: value %s, %d sets at concurrency %d, ping every %v, GOMAXPROCS=%d\n",
		humanSize(r0.ValueSize), r0.Requests, r0.Concurrency, time.Duration(r0.PingIntervalMs*float64(time.Millisecond)), r0.GOMAXPROCS)
	rows := []struct {
		name string
		cell func(r result) string
	}{
		{"path", func(r result) string { return r.Mode }},
		{"wall time", func(r result) string { return fmt.Sprintf("%.2f s", r.WallSeconds) }},
		{"sets/s", func(r result) string { return fmt.Sprintf("%.2f", r.SetsPerSecond) }},
		{"set p50 / p95", func(r result) string { return fmt.Sprintf("%.0f / %.0f ms", r.SetP50Ms, r.SetP95Ms) }},
		{"pings answered", func(r result) string { return strconv.Itoa(r.PingsAnswered) }},
		{"ping p50 / p99 / max", func(r result) string {
			return fmt.Sprintf("%.2f / %.2f / %.2f ms", r.PingP50Ms, r.PingP99Ms, r.PingMaxMs)
		}},
		{"max GC pause (STW total)", func(r result) string { return fmt.Sprintf("%.3f ms", r.MaxGCPauseMs) }},
		{"max GC stopping latency", func(r result) string { return fmt.Sprintf("%.3f ms", r.MaxGCStoppingMs) }},
		{"GC cycles", func(r result) string { return strconv.FormatUint(r.GCCycles, 10) }},
		{"peak heap", func(r result) string { return fmt.Sprintf("%.0f MiB", r.PeakHeapMiB) }},
		{"server CPU", func(r result) string { return fmt.Sprintf("%.2f cores", r.CPUCores) }},
	}
	for _, row := range rows {
		fmt.Fprintf(w, "  %-26s", row.name)
		for _, r := range rs {
			fmt.Fprintf(w, " %-26s", row.cell(r))
		}
		fmt.Fprintln(w)
	}
}

func humanSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func run(o options, mode string) (result, error) {
	rs, err := redisserver.Start()
	if err != nil {
		return result{}, err
	}
	defer rs.Stop()
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), childEnv+"=1", childEnv+"_SIZE="+strconv.Itoa(o.valueSize), childEnv+"_REDIS="+rs.URL(), childEnv+"_MODE="+mode)
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return result{}, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := child.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = child.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = child.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return result{}, fmt.Errorf("child did not report its address: %w", err)
	}
	base := "http://" + strings.TrimSpace(strings.TrimPrefix(line, "LISTEN "))
	hc := &http.Client{
		Timeout:   5 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency + 2, DisableCompression: true},
	}
	// Warm up: one set and one get (key derivation, connections, L1).
	if err := get(hc, base+"/set?key=warm", "ok"); err != nil {
		return result{}, err
	}
	if err := get(hc, base+"/get?key=warm", strconv.Itoa(o.valueSize)); err != nil {
		return result{}, err
	}
	if err := get(hc, base+"/stats/reset", "ok"); err != nil {
		return result{}, err
	}
	res, err := measure(hc, base, o)
	res.Mode = mode
	return res, err
}

func measure(hc *http.Client, base string, o options) (result, error) {
	stop := make(chan struct{})
	var pings []time.Duration
	var pingErr error
	var pw sync.WaitGroup
	pw.Go(func() { pings, pingErr = pinger(hc, base, o.pingInterval, stop) })

	start := time.Now()
	jobs := make(chan int)
	setLat := make([]time.Duration, o.requests)
	errs := make(chan error, o.requests)
	var sw sync.WaitGroup
	for range o.concurrency {
		sw.Go(func() {
			for i := range jobs {
				t := time.Now()
				if err := get(hc, base+"/set?key=sb"+strconv.Itoa(i%o.concurrency), "ok"); err != nil {
					errs <- err
					continue
				}
				setLat[i] = time.Since(t)
			}
		})
	}
	for i := range o.requests {
		jobs <- i
	}
	close(jobs)
	sw.Wait()
	wall := time.Since(start)
	close(stop)
	pw.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	if pingErr != nil {
		return result{}, pingErr
	}
	var st childStats
	if err := getJSON(hc, base+"/stats", &st); err != nil {
		return result{}, err
	}
	if err := get(hc, base+"/get?key=sb0", strconv.Itoa(o.valueSize)); err != nil {
		return result{}, fmt.Errorf("read-back after the run: %w", err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	res := result{
		ValueSize: o.valueSize, Requests: o.requests, Concurrency: o.concurrency,
		PingIntervalMs: ms(o.pingInterval),
		WallSeconds:    wall.Seconds(),
		SetsPerSecond:  float64(o.requests) / wall.Seconds(),
		SetP50Ms:       ms(quantile(setLat, 0.50)),
		SetP95Ms:       ms(quantile(setLat, 0.95)),
		PingsAnswered:  len(pings),
		PingP50Ms:      ms(quantile(pings, 0.50)),
		PingP99Ms:      ms(quantile(pings, 0.99)),
		PingMaxMs:      ms(quantile(pings, 1)),
		MaxGCPauseMs:   st.MaxGCPauseNs / 1e6, MaxGCStoppingMs: st.MaxGCStoppingNs / 1e6,
		GCCycles: st.GCCycles, GOMAXPROCS: st.GOMAXPROCS,
		PeakHeapMiB: float64(st.PeakHeapBytes) / (1 << 20),
	}
	if st.WallSeconds > 0 {
		res.CPUCores = st.CPUSeconds / st.WallSeconds
	}
	return res, nil
}

// pinger sends one /ping per interval (the next waits for the previous:
// a stalled server answers fewer pings) until stop closes.
func pinger(hc *http.Client, base string, interval time.Duration, stop <-chan struct{}) ([]time.Duration, error) {
	var lat []time.Duration
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		t := time.Now()
		if err := get(hc, base+"/ping", "pong"); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
		select {
		case <-stop:
			return lat, nil
		case <-tick.C:
		}
	}
}

func get(hc *http.Client, url, want string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != want {
		return fmt.Errorf("%s: status %d", strings.SplitN(url, "?", 2)[0], resp.StatusCode)
	}
	return nil
}

func getJSON(hc *http.Client, url string, v any) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// quantile returns the q-quantile (nearest rank) of d.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}
