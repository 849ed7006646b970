package main

// Diagnostics for entries cachekit-py wrote in auto mode. The protocol lets an
// SDK parse another SDK's container for diagnostics only, never decode it as
// a value: this file reads the CK v3 frame's fixed prefix and its plaintext
// JSON header, and reports a few header fields. The payload is not touched.

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// ckPrefixLen is the CK frame's fixed prefix: "CK", a version byte and a
// 4-byte big-endian header length.
const ckPrefixLen = 7

// ckVersion is the only CK frame version the protocol defines.
const ckVersion = 3

// isPythonFrame reports whether b starts with the CK frame magic.
func isPythonFrame(b []byte) bool {
	return len(b) >= 2 && b[0] == 'C' && b[1] == 'K'
}

// inspectPythonFrame reports a CK frame and always ends with an integrity
// error: this SDK never decodes another SDK's auto-mode container.
func inspectPythonFrame(r report, m *encryption.Manager, b []byte) error {
	const why = "written by the Python SDK in auto mode (CK frame); only cachekit-py decodes it. " +
		"Share values across SDKs with interop mode"
	r.line("container", "cachekit-py CK frame (Python SDK, auto mode)")
	if len(b) < ckPrefixLen {
		r.line("frame", "truncated: shorter than the %d-byte prefix", ckPrefixLen)
		return integrityErrorf("%s", why)
	}
	version := b[2]
	hdrLen := binary.BigEndian.Uint32(b[3:ckPrefixLen])
	if version != ckVersion {
		r.line("frame", "version %d (only %d is defined)", version, ckVersion)
		return integrityErrorf("%s", why)
	}
	if uint64(hdrLen) > uint64(len(b)-ckPrefixLen) {
		r.line("frame", "version %d, header length %d overruns the entry", version, hdrLen)
		return integrityErrorf("%s", why)
	}
	header := b[ckPrefixLen : ckPrefixLen+int(hdrLen)]
	r.line("frame", "version %d, header %d bytes, payload %d bytes", version, hdrLen, len(b)-ckPrefixLen-int(hdrLen))
	var h struct {
		S string         `json:"s"`
		M map[string]any `json:"m"`
		V string         `json:"v"`
	}
	if err := json.Unmarshal(header, &h); err != nil {
		r.line("header", "not a JSON object")
		return integrityErrorf("%s", why)
	}
	r.line("serializer", "%s", strconv.Quote(h.S))
	for _, f := range []string{"format", "compressed", "encrypted", "original_type", "key_fingerprint"} {
		if v, ok := h.M[f]; ok {
			r.line(strings.ReplaceAll(f, "_", " "), "%s", headerScalar(v))
		}
	}
	if fp, ok := h.M["key_fingerprint"].(string); ok && m != nil {
		r.line("our keyring", "%s", fingerprintMatch(m, fp))
	}
	r.line("note", "the header is unauthenticated metadata; the payload is not decoded")
	return integrityErrorf("%s", why)
}

// headerScalar prints a header field that is a string, bool or number;
// anything nested is summarised, not dumped.
func headerScalar(v any) string {
	switch t := v.(type) {
	case string:
		return strconv.Quote(t)
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case nil:
		return "null"
	default:
		return "(structured)"
	}
}

// fingerprintMatch says which keyring entry, if any, has the fingerprint a
// CK header names.
func fingerprintMatch(m *encryption.Manager, fp string) string {
	st := m.Stats()
	if strings.EqualFold(fp, st.Fingerprint) {
		return "fingerprint matches the current key"
	}
	for i, p := range st.PreviousFingerprints {
		if strings.EqualFold(fp, p) {
			return "fingerprint matches " + keyLabel(i+1)
		}
	}
	return "fingerprint matches no key in the keyring"
}
