package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// childStats is what the server reports about itself for the measured
// window (between /stats/reset and /stats).
type childStats struct {
	WallSeconds     float64 `json:"wall_seconds"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	GCCycles        uint64  `json:"gc_cycles"`
	MaxGCPauseNs    float64 `json:"max_gc_pause_ns"`
	MaxGCStoppingNs float64 `json:"max_gc_stopping_ns"`
	PeakHeapBytes   uint64  `json:"peak_heap_bytes"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
}

// Metric names read from runtime/metrics. The pause histograms count
// cumulatively; the window's maximum is the upper bound of the highest
// bucket whose count grew.
const (
	mPauses   = "/sched/pauses/total/gc:seconds"
	mStopping = "/sched/pauses/stopping/gc:seconds"
	mCycles   = "/gc/cycles/total:gc-cycles"
	mHeap     = "/memory/classes/heap/objects:bytes"
)

// heapPeak samples the heap's object bytes every 2 ms and keeps the
// largest sample since the last reset.
type heapPeak struct{ peak atomic.Uint64 }

func (h *heapPeak) run(stop <-chan struct{}) {
	s := []metrics.Sample{{Name: mHeap}}
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > h.peak.Load() {
			h.peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

type snapshot struct {
	at       time.Time
	cpu      float64
	cycles   uint64
	pauses   []uint64
	stopping []uint64
	pBuckets []float64
	sBuckets []float64
}

func takeSnapshot() snapshot {
	s := []metrics.Sample{{Name: mPauses}, {Name: mStopping}, {Name: mCycles}}
	metrics.Read(s)
	p, st := s[0].Value.Float64Histogram(), s[1].Value.Float64Histogram()
	return snapshot{
		at:       time.Now(),
		cpu:      cpuSeconds(),
		cycles:   s[2].Value.Uint64(),
		pauses:   append([]uint64(nil), p.Counts...),
		stopping: append([]uint64(nil), st.Counts...),
		pBuckets: p.Buckets,
		sBuckets: st.Buckets,
	}
}

// maxGrown returns the upper bound (ns) of the highest bucket that grew
// between before and after, or 0.
func maxGrown(before, after []uint64, buckets []float64) float64 {
	for i := len(after) - 1; i >= 0; i-- {
		if after[i] > before[i] {
			hi := buckets[i+1]
			if hi > 1e9 || hi != hi { // +Inf bucket: report its lower bound
				hi = buckets[i]
			}
			return hi * 1e9
		}
	}
	return 0
}

func since(a, b snapshot) childStats {
	return childStats{
		WallSeconds:     b.at.Sub(a.at).Seconds(),
		CPUSeconds:      b.cpu - a.cpu,
		GCCycles:        b.cycles - a.cycles,
		MaxGCPauseNs:    maxGrown(a.pauses, b.pauses, b.pBuckets),
		MaxGCStoppingNs: maxGrown(a.stopping, b.stopping, b.sBuckets),
		GOMAXPROCS:      runtime.GOMAXPROCS(0),
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// runChild is the server process: it stores one large value per /set
// through an encrypted Client (L1 + Redis) and answers /ping at once. In
// mode "oneshot" the library does its large work the way it did before it
// had a chunked path: every copy, hash, AES-GCM call and LZ4 decode in one
// call, and no bound on concurrent large work.
func runChild(redisURL string, valueSize int, mode string) error {
	unbounded := false // the library default bound
	if mode == modeOneShot {
		chunked.SetOneShot(true)
		unbounded = true
	}
	l1 := int64(64 << 20)
	if need := int64(valueSize) * 4; need > l1 {
		l1 = need
	}
	c, err := cachekit.New(cachekit.Options{
		RedisURL:   redisURL,
		L1MaxBytes: l1,
		DefaultTTL: time.Minute,
		Encryption: &encryption.Config{MasterKey: fixture.MasterKey},
		// The value plus its msgpack header: a 64 MiB value is a few
		// bytes over the default limit.
		MaxValueBytes:        valueSize + 1<<20,
		UnboundedLargeValues: unbounded,
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Warm(context.Background()); err != nil {
		return err
	}
	value := fixture.NewRandomBytes(valueSize)

	if path := os.Getenv(childEnv + "_TRACE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	var heap heapPeak
	stopHeap := make(chan struct{})
	defer close(stopHeap)
	go heap.run(stopHeap)
	var mu sync.Mutex
	start := takeSnapshot()
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("pong")) })
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		if err := c.SetWithTTL(r.Context(), r.URL.Query().Get("key"), value, time.Minute); err != nil {
			http.Error(w, "set failed", http.StatusInternalServerError)
			fmt.Fprintln(os.Stderr, "serverbench child: set:", err)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/get", func(w http.ResponseWriter, r *http.Request) {
		out, err := c.GetBytes(r.Context(), r.URL.Query().Get("key"))
		if err != nil {
			http.Error(w, "get failed", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(strconv.Itoa(len(out))))
	})
	mux.HandleFunc("/stats/reset", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		start = takeSnapshot()
		heap.peak.Store(0)
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		st := since(start, takeSnapshot())
		st.PeakHeapBytes = heap.peak.Load()
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(st)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("LISTEN %s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// The parent closes our stdin when it is done; that ends the server.
	go func() {
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
