package protocol

import (
	"strconv"
	"time"

	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
)

// Temporal values in interop documents. The value profile writes a datetime,
// a date and a time of day as the protocol's temporal sentinel maps, which
// cachekit-py writes for datetime.datetime, datetime.date and datetime.time
// and every reader must revive (WIRE-20):
//
//	{"__datetime__": true, "value": "2025-11-14T10:30:00+00:00"}  time.Time
//	{"__date__": true, "value": "2025-11-14"}                     Date
//	{"__time__": true, "value": "10:30:00"}                       TimeOfDay
//
// The text is what Python's isoformat gives: microseconds only when non-zero,
// and an offset as +HH:MM (+HH:MM:SS when it has seconds). Go has no
// date-only or time-only type, so Date and TimeOfDay are this package's,
// shaped like cloud.google.com/go/civil's, with an optional UTC offset on a
// time of day (Python's aware time).

// Date is a calendar date with no time of day and no zone: the value of
// the {"__date__": true, "value": "YYYY-MM-DD"} sentinel (Python's
// datetime.date). Year is 1 to 9999, as in Python.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf returns t's calendar date in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// String returns the date as YYYY-MM-DD.
func (d Date) String() string { return string(d.appendISO(nil)) }

// valid reports whether d is a real date within Python's years 1 to 9999.
func (d Date) valid() bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < time.January || d.Month > time.December || d.Day < 1 {
		return false
	}
	y, m, day := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Date()
	return y == d.Year && m == d.Month && day == d.Day
}

func (d Date) appendISO(dst []byte) []byte {
	dst = appendPadded(dst, d.Year, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(d.Month), 2)
	dst = append(dst, '-')
	return appendPadded(dst, d.Day, 2)
}

// MarshalMsgpack returns the date's sentinel map in canonical MessagePack,
// so the vmihailenco/msgpack encoder (and a Client in either mode) writes
// a Date the way every SDK reads one. An invalid date is an error wrapping
// ErrUnsupported.
func (d Date) MarshalMsgpack() ([]byte, error) { return appendDateSentinel(nil, d) }

// UnmarshalMsgpack reads a date sentinel map (any well-formed encoding of
// it). Anything else is an error wrapping ErrMalformed.
func (d *Date) UnmarshalMsgpack(b []byte) error { return unmarshalSentinel(b, d, errNotDateSentinel) }

// TimeOfDay is a wall-clock time with no date: the value of the
// {"__time__": true, "value": "HH:MM:SS[.ffffff][+HH:MM]"} sentinel
// (Python's datetime.time). HasOffset marks a time that carries a UTC
// offset (Python's aware time), Offset being that offset in seconds east
// of UTC; without it the time is naive. Nanosecond is written to the
// microsecond, Python's precision.
type TimeOfDay struct {
	Hour, Minute, Second, Nanosecond int
	HasOffset                        bool
	Offset                           int
}

// TimeOfDayOf returns t's wall-clock time and its UTC offset.
func TimeOfDayOf(t time.Time) TimeOfDay {
	_, off := t.Zone()
	return TimeOfDay{Hour: t.Hour(), Minute: t.Minute(), Second: t.Second(), Nanosecond: t.Nanosecond(), HasOffset: true, Offset: off}
}

// String returns the time as Python's isoformat writes it.
func (t TimeOfDay) String() string { return string(t.appendISO(nil)) }

// valid reports whether every field is in range (an offset under 24 hours).
func (t TimeOfDay) valid() bool {
	return t.Hour >= 0 && t.Hour < 24 && t.Minute >= 0 && t.Minute < 60 && t.Second >= 0 && t.Second < 60 &&
		t.Nanosecond >= 0 && t.Nanosecond < 1e9 && t.Offset > -86400 && t.Offset < 86400 && (t.HasOffset || t.Offset == 0)
}

func (t TimeOfDay) appendISO(dst []byte) []byte {
	dst = appendPadded(dst, t.Hour, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, t.Minute, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, t.Second, 2)
	if us := t.Nanosecond / 1000; us != 0 {
		dst = append(dst, '.')
		dst = appendPadded(dst, us, 6)
	}
	if t.HasOffset {
		dst = appendOffset(dst, t.Offset)
	}
	return dst
}

// MarshalMsgpack returns the time's sentinel map in canonical MessagePack
// (see Date.MarshalMsgpack). A field out of range is an error wrapping
// ErrUnsupported.
func (t TimeOfDay) MarshalMsgpack() ([]byte, error) { return appendTimeSentinel(nil, t) }

// UnmarshalMsgpack reads a time sentinel map (any well-formed encoding of
// it). Anything else is an error wrapping ErrMalformed.
func (t *TimeOfDay) UnmarshalMsgpack(b []byte) error {
	return unmarshalSentinel(b, t, errNotTimeSentinel)
}

// The sentinel maps' keys.
const (
	sentinelDatetime = "__datetime__"
	sentinelDate     = "__date__"
	sentinelTime     = "__time__"
)

var (
	errBadDate         = formatErr(opCanonical, ErrUnsupported, "a date outside years 1 to 9999, or not a calendar day")
	errBadTimeOfDay    = formatErr(opCanonical, ErrUnsupported, "a time of day with a field out of range")
	errTemporalArg     = formatErr(opCanonical, ErrUnsupported, "a date or a time of day has no argument form in interop/v1 keys")
	errNotDateSentinel = formatErr("temporal", ErrMalformed, "not a __date__ sentinel map")
	errNotTimeSentinel = formatErr("temporal", ErrMalformed, "not a __time__ sentinel map")
)

// appendSentinel writes {key: true, "value": iso}: the sentinel maps'
// canonical bytes ("__..." sorts before "value").
func appendSentinel(dst []byte, key string, iso []byte) []byte {
	dst = mp.AppendMapHeader(dst, 2)
	dst = mp.AppendStr(dst, key)
	dst = mp.AppendBool(dst, true)
	dst = mp.AppendStr(dst, "value")
	dst = mp.AppendStrHeader(dst, len(iso))
	return append(dst, iso...)
}

func appendDateSentinel(dst []byte, d Date) ([]byte, error) {
	if !d.valid() {
		return dst, errBadDate
	}
	var buf [10]byte
	return appendSentinel(dst, sentinelDate, d.appendISO(buf[:0])), nil
}

func appendTimeSentinel(dst []byte, t TimeOfDay) ([]byte, error) {
	if !t.valid() {
		return dst, errBadTimeOfDay
	}
	var buf [24]byte
	return appendSentinel(dst, sentinelTime, t.appendISO(buf[:0])), nil
}

// TemporalSentinel reports whether m is one of the protocol's temporal
// sentinel maps, exactly two keys, the marker true and a "value" string
// that parses, and returns the Go value it stands for: a time.Time for
// __datetime__ (a text without an offset reads as UTC), a Date for
// __date__, a TimeOfDay for __time__. Any other map is left to be a map.
func TemporalSentinel(m map[string]any) (any, bool) {
	if len(m) != 2 {
		return nil, false
	}
	s, ok := m["value"].(string)
	if !ok {
		return nil, false
	}
	switch {
	case m[sentinelDatetime] == true:
		for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, true
			}
		}
	case m[sentinelDate] == true:
		if t, err := time.Parse("2006-01-02", s); err == nil {
			return DateOf(t), true
		}
	case m[sentinelTime] == true:
		for _, layout := range []string{"15:04:05.999999999Z07:00", "15:04:05.999999999Z07:00:00", "15:04:05.999999999"} {
			t, err := time.Parse(layout, s)
			if err != nil {
				continue
			}
			tod := TimeOfDayOf(t)
			tod.HasOffset = layout != "15:04:05.999999999"
			if !tod.HasOffset {
				tod.Offset = 0
			}
			return tod, true
		}
	}
	return nil, false
}

// unmarshalSentinel decodes b, a sentinel map, into *dst when it stands
// for a T; any other document is notT, or the decoder's error.
func unmarshalSentinel[T Date | TimeOfDay](b []byte, dst *T, notT error) error {
	v, err := DecodeMsgpack(b, DecodeLimits{MaxDepth: minDepthFloor})
	if err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return notT
	}
	x, ok := TemporalSentinel(m)
	if !ok {
		return notT
	}
	t, ok := x.(T)
	if !ok {
		return notT
	}
	*dst = t
	return nil
}

// appendPadded writes n in decimal, zero-padded to width digits.
func appendPadded(dst []byte, n, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendOffset writes a UTC offset as +HH:MM, or +HH:MM:SS when it has
// seconds, as Python does.
func appendOffset(dst []byte, off int) []byte {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = append(dst, sign)
	dst = appendPadded(dst, off/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, off/60%60, 2)
	if off%60 != 0 {
		dst = append(dst, ':')
		dst = appendPadded(dst, off%60, 2)
	}
	return dst
}
