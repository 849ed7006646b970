package structdec

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// testedMsgpack is the vmihailenco/msgpack version this package's
// differential tests and fuzz corpus were last run against. structdec
// reproduces that decoder's results for the shapes it takes, so a new
// msgpack version is a change to review here: run the fuzz targets against
// it, then update this constant.
const testedMsgpack = "v5.4.1"

// TestMsgpackVersionPinned fails when go.mod requires another msgpack
// version than the one structdec was verified against.
func TestMsgpackVersionPinned(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/vmihailenco/msgpack/v5 (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/vmihailenco/msgpack/v5")
	}
	if got := string(m[1]); got != testedMsgpack {
		t.Fatalf("go.mod requires msgpack %s; structdec was verified against %s: run its fuzz targets (make fuzz) against the new version, then update testedMsgpack", got, testedMsgpack)
	}
}
