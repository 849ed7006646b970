package redistest

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replicationLimit bounds how long WaitReplicated waits for replicas.
const replicationLimit = 10 * time.Second

// WaitReplicated waits until every replica of every live master has
// processed all the writes its master had received when the call began,
// and fails tb when that takes over 10 s or a master that was started with
// replicas has none online. Unlike WAIT sent on a fresh connection (which
// counts acknowledgements of that connection's own writes, none), it
// covers writes made on any connection.
func (c *Cluster) WaitReplicated(tb testing.TB) {
	tb.Helper()
	if len(c.Nodes) == c.masters {
		return // no replicas
	}
	for _, s := range c.Nodes {
		if s.live() && isMaster(s.Addr()) {
			waitReplicated(tb, s.Addr())
		}
	}
}

// WaitReplicated waits until the replica has processed all the writes
// the current master had received when the call began, and fails tb when
// that takes over 10 s or the master has no replica online.
func (s *Sentinel) WaitReplicated(tb testing.TB) {
	tb.Helper()
	waitReplicated(tb, s.MasterAddr(tb))
}

// waitReplicated waits until every online replica of the master at addr
// (at least one) reports a processed offset at or past the master's
// offset read first.
func waitReplicated(tb testing.TB, master string) {
	tb.Helper()
	info, err := DoBulk(master, "INFO", "replication")
	target, ok := infoInt(info, "master_repl_offset")
	if err != nil || !ok {
		tb.Fatalf("redistest: INFO replication of %s: %v", master, err)
	}
	waitFor(tb, replicationLimit, "replicas of "+master+" to catch up", func() bool { return caughtUp(master, target) })
}

// caughtUp reports whether the master at addr has at least one online
// replica and every one of them has processed the stream up to target.
func caughtUp(master string, target int64) bool {
	info, err := DoBulk(master, "INFO", "replication")
	if err != nil {
		return false
	}
	replicas := onlineReplicas(info)
	for _, r := range replicas {
		rinfo, err := DoBulk(r, "INFO", "replication")
		if off, ok := infoInt(rinfo, "slave_repl_offset"); err != nil || !ok || off < target {
			return false
		}
	}
	return len(replicas) > 0
}

// infoInt returns the integer field name of an INFO reply.
func infoInt(info, name string) (int64, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// onlineReplicas returns the addresses of the replicas a master's INFO
// replication lists as online (slaveN:ip=...,port=...,state=online,...).
func onlineReplicas(info string) []string {
	var out []string
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "slave") || !strings.Contains(fields, "state=online") {
			continue
		}
		var ip, port string
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "ip="); ok {
				ip = v
			} else if v, ok := strings.CutPrefix(f, "port="); ok {
				port = v
			}
		}
		if ip != "" && port != "" {
			out = append(out, net.JoinHostPort(ip, port))
		}
	}
	return out
}
