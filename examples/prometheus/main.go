// Command prometheus serves a cache-backed endpoint and the cache's
// OpenTelemetry metrics in the Prometheus text format:
//
//	go run . -addr 127.0.0.1:9464
//	curl '127.0.0.1:9464/user?id=42'
//	curl 127.0.0.1:9464/metrics | grep cachekit_
//
// The Client's MeterProvider reads through go.opentelemetry.io's Prometheus
// exporter, which registers with a Prometheus registry that /metrics
// serves. The cache runs on the in-process L1 alone; with
// CACHEKIT_REDIS_URL set it uses that Redis as L2 too. Values are
// encrypted under a random key per run.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// User is what the endpoint serves from the cache.
type User struct {
	ID   int64  `msgpack:"id"`
	Name string `msgpack:"name"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "listen address")
	flag.Parse()
	h, closeFn, err := newHandler(os.Getenv(cachekit.RedisURLEnv))
	if err != nil {
		log.Fatal(err)
	}
	defer closeFn()
	log.Printf("serving /user?id=N and /metrics on http://%s", *addr)
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// newHandler wires the two lines that matter, the exporter and
// Options.MeterProvider, and returns the server's routes and a function
// that releases the Client and the MeterProvider.
func newHandler(redisURL string) (http.Handler, func(), error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))

	key := make([]byte, encryption.KeySize)
	_, _ = rand.Read(key)
	opts := cachekit.Minimal()
	opts.RedisURL = redisURL
	opts.Encryption = &encryption.Config{MasterKey: key}
	opts.MeterProvider = mp
	c, err := cachekit.New(opts)
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		if err != nil {
			http.Error(w, "id must be a number", http.StatusBadRequest)
			return
		}
		u, err := cachekit.GetOrLoad(r.Context(), c, "user:"+strconv.FormatInt(id, 10),
			func(context.Context) (User, error) { return loadUser(id) })
		if errors.Is(err, cachekit.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, "cache error", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%d %s\n", u.ID, u.Name)
	})
	return mux, func() {
		_ = c.Close()
		_ = mp.Shutdown(context.Background())
	}, nil
}

// loadUser stands in for a database read.
func loadUser(id int64) (User, error) {
	if id <= 0 {
		return User{}, cachekit.ErrNotFound
	}
	return User{ID: id, Name: "user-" + strconv.FormatInt(id, 10)}, nil
}
