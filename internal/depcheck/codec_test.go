package depcheck

import (
	"strings"
	"testing"
)

// cachekit/internal/codec runs between open and seal on plaintext values only
// (its doc.go): it must not reach the packages that hold keys, nonces or
// sealed bytes, nor the tiers and their clients.
func TestCodecReachesNoKeysNorTiers(t *testing.T) {
	bad := []string{
		module + "/cachekit", module + "/encryption", module + "/l1", module + "/l2",
		"github.com/redis/go-redis", "github.com/dgraph-io/ristretto",
	}
	for _, d := range deps(t, "cachekit/internal/codec") {
		if d == module+"/cachekit/internal/codec" {
			continue
		}
		for _, b := range bad {
			if d == b || strings.HasPrefix(d, b+"/") {
				t.Errorf("cachekit/internal/codec reaches %s", d)
			}
		}
	}
}
