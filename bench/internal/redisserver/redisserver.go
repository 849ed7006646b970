// Package redisserver gives the benchmarks a Redis to talk to: the one named
// by CACHEKIT_REDIS_URL when it is set, else a private redis-server started
// on a free loopback port in a temporary directory, with persistence off.
package redisserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// URLEnv names the environment variable that points the benchmarks at an
// existing Redis instead of a private one.
const URLEnv = "CACHEKIT_REDIS_URL"

// Server is a Redis the benchmarks use. Stop releases it; for an external
// server Stop does nothing.
type Server struct {
	url string
	dir string
	cmd *exec.Cmd
}

// ErrNoRedis is returned by Start when CACHEKIT_REDIS_URL is unset and no
// redis-server binary is on PATH.
var ErrNoRedis = errors.New("redisserver: redis-server not on PATH and CACHEKIT_REDIS_URL unset")

// Start returns the external server named by CACHEKIT_REDIS_URL, or starts
// a private redis-server and waits until it accepts connections.
func Start() (*Server, error) {
	if u := os.Getenv(URLEnv); u != "" {
		return &Server{url: u}, nil
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNoRedis
	}
	dir, err := os.MkdirTemp("", "cachekit-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: temp dir: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command("redis-server",
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
			"--protected-mode", "yes",
			"--logfile", filepath.Join(dir, "redis.log"),
		)
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redisserver: start redis-server: %w", err)
		}
		if lastErr = waitReady(addr, 5*time.Second); lastErr == nil {
			return &Server{url: "redis://" + addr + "/0", dir: dir, cmd: cmd}, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redisserver: redis-server did not come up: %w", lastErr)
}

// URL is a redis:// URL for the server.
func (s *Server) URL() string { return s.url }

// Private reports whether this process started the server (and so may
// flush it freely).
func (s *Server) Private() bool { return s.cmd != nil }

// Stop kills a private server and removes its directory.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
	s.cmd = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls addr with PING until it answers +PONG or timeout passes.
func waitReady(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		var c net.Conn
		c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			n := 0
			if err == nil {
				n, err = c.Read(buf)
			}
			_ = c.Close()
			if err == nil && string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
			if err == nil {
				err = errors.New("redisserver: unexpected PING reply")
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}
