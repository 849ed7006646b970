package l2

import (
	"sort"
	"strconv"
	"strings"
)

// Placeholders are what the client stores in a key that holds no value: a
// lease (a load in progress, lease.go) and a negative entry (a cached "not
// found"). They are one family: each starts with a 12-byte head, 0xc1 "ck-",
// a five-letter kind and "/1 ", and has the fixed length of its kind, so
// that 12 bytes and a length tell any of them from an entry without reading
// the rest (STRLEN and GETRANGE 0 11: the probe of absent.go, and
// placeholderAt in the scripts). The head starts with 0xc1, a byte
// MessagePack never uses, so no plain or enveloped entry starts with it; an
// encrypted entry starts with its 12-byte nonce, which would have to equal a
// head byte for byte (an 8-byte instance id and a counter no nonce source
// reaches).
//
// The commands that answer from the key's presence alone (Exists, TTL,
// ExpireTime, Expire, SetCond, Delete's count) treat every placeholder as a
// missing key. The reads that return bytes (Get, GetUpTo, GetWithTTL,
// MGet, MGetWithTTL, ScanEntries) treat a lease as missing and return a
// negative entry's bytes: only the client can authenticate them, and it
// reads them as absent (or as an entry that cannot be opened).

// LeaseMagic starts every lease placeholder.
const LeaseMagic = "\xc1ck-lease/1 "

// LeaseLen is the length of a lease placeholder in bytes.
const LeaseLen = len(LeaseMagic) + 32

// NegativeMagic starts every negative entry: a cached "not found". What
// follows it (NegativeLen-len(NegativeMagic) bytes) is the client's: sealed
// like a value, with encryption on.
const NegativeMagic = "\xc1ck-absnt/1 "

// NegativeLen is the length of a negative entry in bytes: NegativeMagic and
// the 38 bytes the client seals after it.
const NegativeLen = len(NegativeMagic) + 38

// placeholderHead is the length of every placeholder's head.
const placeholderHead = 12

// kinds maps each placeholder kind's head to its length.
var kinds = map[string]int{LeaseMagic: LeaseLen, NegativeMagic: NegativeLen}

// IsLease reports whether b is a lease placeholder.
func IsLease(b []byte) bool {
	return len(b) == LeaseLen && string(b[:placeholderHead]) == LeaseMagic
}

// IsNegative reports whether b has the form of a negative entry (its head
// and length); whether it is one the client wrote, only the client can say.
func IsNegative(b []byte) bool {
	return len(b) == NegativeLen && string(b[:placeholderHead]) == NegativeMagic
}

// IsPlaceholder reports whether b is a placeholder of any kind.
func IsPlaceholder(b []byte) bool {
	return len(b) >= placeholderHead && placeholderLen(string(b[:placeholderHead])) == len(b)
}

// placeholderLen is the length of the placeholder kind whose head is head,
// 0 when head is no kind's.
func placeholderLen(head string) int { return kinds[head] }

// luaPlaceholders defines the Lua helpers every placeholder-aware script
// starts with: isLease(v) for a value read with GET; placeholderAt(k) for a
// key, reading at most 12 bytes of it; and luaPublish's publish().
var luaPlaceholders = func() string {
	heads := make([]string, 0, len(kinds))
	for h := range kinds {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	var table, lens strings.Builder
	for _, h := range heads {
		n := strconv.Itoa(kinds[h])
		table.WriteString("[" + luaQuote(h) + "] = " + n + ", ")
		lens.WriteString("[" + n + "] = true, ")
	}
	return `local magic = ` + luaQuote(LeaseMagic) + `
local kinds = {` + table.String() + `}
local lens = {` + lens.String() + `}
local function isLease(v) return type(v) == 'string' and #v == ` + strconv.Itoa(LeaseLen) + ` and string.sub(v, 1, #magic) == magic end
local function placeholderAt(k)
  if redis.call('TYPE', k).ok ~= 'string' then return false end
  local n = redis.call('STRLEN', k)
  if not lens[n] then return false end
  return kinds[redis.call('GETRANGE', k, 0, ` + strconv.Itoa(placeholderHead-1) + `)] == n
end
` + luaPublish
}()

// luaPublish defines publish(), which a script that wrote its key calls
// last: it publishes the announcement arguments (the script's last two,
// announceArgs' channel and message; an empty channel publishes nothing)
// and returns the script's reply for "stored": 1, or {1, the error} when
// Redis refused the PUBLISH (redis.pcall: the write stays; stored reads
// the reply).
const luaPublish = `local function publish()
  if ARGV[#ARGV-1] == '' then return 1 end
  local r = redis.pcall('PUBLISH', ARGV[#ARGV-1], ARGV[#ARGV])
  if type(r) == 'table' and r.err then return {1, r.err} end
  return 1
end
`

// luaQuote writes s as a Lua string literal with every byte escaped.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		b.WriteByte('\\')
		b.WriteString(strconv.Itoa(int(s[i])))
	}
	b.WriteByte('\'')
	return b.String()
}
