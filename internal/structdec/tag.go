package structdec

import "strings"

// tagInfo is what a `msgpack` struct tag says about a field, for the tags
// this package understands.
type tagInfo struct {
	name string // the key, "" when the tag leaves it to the Go field name
	skip bool   // the tag's name is "-": msgpack never decodes the field
}

// parseTag reads a `msgpack` tag value the way vmihailenco's tagparser
// would, but only for the forms whose result is beyond doubt: a name made of
// printable ASCII other than space, quote, colon, backslash and brackets,
// optionally followed by ",omitempty". It reports false for anything else
// (other options, empty options, quoting, key:value pairs, white space,
// non-ASCII), which makes the field's struct ineligible.
func parseTag(tag string) (tagInfo, bool) {
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if c <= ' ' || c >= 0x7f {
			return tagInfo{}, false
		}
		switch c {
		case '\'', '"', ':', '\\', '(', ')':
			return tagInfo{}, false
		}
	}
	name, opts, hasOpts := strings.Cut(tag, ",")
	if hasOpts {
		for opt := range strings.SplitSeq(opts, ",") {
			if opt != "omitempty" {
				return tagInfo{}, false
			}
		}
	}
	return tagInfo{name: name, skip: name == "-"}, true
}
