//go:build !unix

package bench

// minorFaults returns -1: this platform's fault count is not read.
func minorFaults() int64 { return -1 }
