package encryption

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is. None of them ever
// carries key material, plaintext, AAD or a cache key.
var (
	// ErrAuthFailed reports that a sealed value did not authenticate under
	// any key the caller's keyring holds, with the AAD it supplied. It is the
	// single, opaque answer for every tag failure: it does not say whether
	// the nonce, the ciphertext, the tag, the AAD or the key was wrong.
	ErrAuthFailed = errors.New("encryption: message authentication failed")

	// ErrNonceExhausted reports that the current key's nonce counter has
	// handed out every value it may. It is sticky: every later encryption
	// under the same derived keys fails the same way. The remedy is to rotate
	// forward to a fresh master key.
	ErrNonceExhausted = errors.New("encryption: nonce counter exhausted; rotate to a new master key")

	// ErrClosed reports a call on a Manager after Close.
	ErrClosed = errors.New("encryption: manager closed")

	// ErrInvalidConfig is what every *ConfigError matches with errors.Is:
	// bad master key material, a bad tenant or a keyring configuration that
	// must be refused at load.
	ErrInvalidConfig = errors.New("encryption: invalid configuration")

	// ErrOverlap reports that the output buffer (the spare capacity of dst)
	// overlaps an input in a way the cipher cannot handle. Only the exact
	// in-place forms documented on Manager.EncryptNow and Manager.DecryptNow
	// are allowed.
	ErrOverlap = errors.New("encryption: output buffer overlaps an input")
)

// ConfigError reports key material, a tenant or a keyring configuration that
// was refused. Field names the offending input (such as "MasterKey",
// "PreviousKeys[2]" or "Tenant"); Reason says what is wrong with it in terms
// of lengths and counts only, never its content.
//
// errors.Is(err, ErrInvalidConfig) is true for every *ConfigError.
type ConfigError struct {
	Field  string // which input was refused
	Reason string // why, without revealing the input
}

// Error implements the error interface.
func (e *ConfigError) Error() string {
	return "encryption: invalid " + e.Field + ": " + e.Reason
}

// Is makes every *ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

func configErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// LengthError reports input whose length is wrong before any cryptography
// runs: a sealed value shorter than Overhead, or a plaintext too long for a
// single AES-GCM message. It carries lengths only.
type LengthError struct {
	Op     string // "decrypt", "encrypt" or "parse nonce"
	Len    int    // length of the offending input, in bytes
	Reason string // what is wrong with that length
}

// Error implements the error interface.
func (e *LengthError) Error() string {
	return fmt.Sprintf("encryption: %s: input of %d bytes %s", e.Op, e.Len, e.Reason)
}

// ProviderError reports that the Config.Provider callback failed or
// panicked. Err is whatever the provider returned (for a panic, an error
// that says so without the panic value, which could hold key material).
// The next call that needs keys calls the provider again.
type ProviderError struct {
	Err error
}

// Error implements the error interface.
func (e *ProviderError) Error() string {
	return "encryption: key provider failed: " + e.Err.Error()
}

// Unwrap returns the provider's own error.
func (e *ProviderError) Unwrap() error { return e.Err }

// errProviderPanic stands in for the value of a provider panic, which is
// never formatted: it might hold key material.
var errProviderPanic = errors.New("provider panicked")

// truncated builds the LengthError for a sealed value below the minimum.
func truncated(op string, n int) *LengthError {
	return &LengthError{Op: op, Len: n, Reason: fmt.Sprintf("is shorter than the %d-byte minimum (nonce and tag)", Overhead)}
}
