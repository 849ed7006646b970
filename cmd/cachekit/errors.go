package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Exit codes. They are part of the tool's interface: scripts branch on them.
const (
	exitOK          = 0 // success
	exitNotFound    = 1 // the key is not in Redis (exists: it does not exist)
	exitUsage       = 2 // bad command line, bad input value or bad configuration
	exitIntegrity   = 3 // the entry exists but does not open: tampered, wrong key or tenant, moved, foreign
	exitUnavailable = 4 // Redis could not be reached or failed
	exitPartial     = 5 // rotate: some entries could not be re-sealed, or it was interrupted
)

// exitError is an error that decides the exit code itself. Its message is
// printed as is, after "cachekit: ", and never holds a key, value or secret.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageErrorf reports a usage or configuration problem (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// integrityErrorf reports an entry that exists but cannot be opened (exit 3).
func integrityErrorf(format string, args ...any) error {
	return &exitError{code: exitIntegrity, msg: fmt.Sprintf(format, args...)}
}

// errNotFound is what commands return for a missing key.
var errNotFound = &exitError{code: exitNotFound, msg: "not found"}

// classify maps an error to its exit code and the one line printed for it.
// The library's own messages are safe to print (they never carry keys,
// values or key material); anything multi-line is folded onto one line.
func classify(err error) (int, string) {
	var (
		xe *exitError
		nh *cachekit.NegativeHitError
		ee *cachekit.EntryError
		be *cachekit.BackendError
		ce *encryption.ConfigError
		ne net.Error
	)
	code := exitUsage
	msg := err.Error()
	switch {
	case errors.As(err, &xe):
		code, msg = xe.code, xe.msg
	case errors.As(err, &nh):
		code, msg = exitNotFound, "not found: a negative entry (a cached not-found, until a write of the key or its TTL)"
	case errors.As(err, &ee):
		// Before ErrNotFound, which an entry that cannot be opened also
		// matches (a miss to an application): to an operator it is an
		// entry that exists and does not open.
		code = exitIntegrity
		msg = entryReason(ee)
	case errors.Is(err, cachekit.ErrNotFound):
		code, msg = exitNotFound, "not found"
	case errors.Is(err, cachekit.ErrAuthFailed):
		code, msg = exitIntegrity, authFailedMsg
	case errors.Is(err, cachekit.ErrWrongType):
		code, msg = exitIntegrity, "not a CacheKit entry: the key holds another Redis type"
	case errors.As(err, &be) && strings.Contains(be.Error(), "DB index is out of range"):
		code, msg = exitUsage, "redis URL: the database index is out of range for this server"
	case errors.As(err, &be), errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = exitUnavailable
		msg = "redis unavailable: " + msg
	case errors.As(err, &ce):
		code = exitUsage
	}
	msg = strings.TrimPrefix(msg, "cachekit: ")
	return code, strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}

// authFailedMsg is the one line for an entry that does not authenticate.
const authFailedMsg = "entry does not authenticate: tampered, written under another key or tenant, " +
	"or moved from another cache key"

// entryReason explains an *EntryError in operator terms, naming the key by
// its digest only.
func entryReason(ee *cachekit.EntryError) string {
	where := "entry " + ee.KeyDigest
	switch {
	case errors.Is(ee, cachekit.ErrAuthFailed):
		return where + ": " + authFailedMsg
	case errors.Is(ee, protocol.ErrPythonFrame):
		return where + ": written by the Python SDK in auto mode (CK frame); only cachekit-py reads it"
	case errors.Is(ee, protocol.ErrForeignContainer):
		return where + ": a ByteStorage envelope, which a --no-compression reader refuses (written with compression on, or another SDK's container)"
	case errors.Is(ee, protocol.ErrChecksum):
		return where + ": envelope checksum mismatch (corrupted or tampered)"
	case errors.As(ee, new(*encryption.LengthError)):
		return where + ": too short to be an encrypted entry"
	default:
		return where + ": cannot be read with these options (" + ee.Err.Error() +
			"); `cachekit inspect` explains it"
	}
}
