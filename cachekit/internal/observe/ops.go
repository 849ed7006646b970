package observe

// Op names a public operation of the Client.
type Op uint8

// The public operations. Adding one means a constant here, its row in ops
// below, and the operation itself in package cachekit.
const (
	OpGet Op = iota
	OpGetWithTTL
	OpAppendValue
	OpGetBytes
	OpInteropGet
	OpSet
	OpSetWithTTL
	OpInteropSet
	OpSetIfAbsent
	OpSetIfPresent
	OpMGet
	OpMSet
	OpMSetWithTTL
	OpDelete
	OpExists
	OpTTL
	OpTouch
	OpGetOrLoad
	OpMGetOrLoad
	numOps
)

// ops is the operation table: each operation's span name, its "op"
// attribute (variants of one operation, such as Get, GetWithTTL and
// GetBytes, share it) and whether it reads values (its outcome is a hit or
// a miss).
var ops = [numOps]struct {
	span   string
	metric string
	read   bool
}{
	OpGet:          {"cachekit.Get", "get", true},
	OpGetWithTTL:   {"cachekit.GetWithTTL", "get", true},
	OpAppendValue:  {"cachekit.AppendValue", "get", true},
	OpGetBytes:     {"cachekit.GetBytes", "get", true},
	OpInteropGet:   {"cachekit.InteropGet", "get", true},
	OpSet:          {"cachekit.Set", "set", false},
	OpSetWithTTL:   {"cachekit.SetWithTTL", "set", false},
	OpInteropSet:   {"cachekit.InteropSet", "set", false},
	OpSetIfAbsent:  {"cachekit.SetIfAbsent", "set_if_absent", false},
	OpSetIfPresent: {"cachekit.SetIfPresent", "set_if_present", false},
	OpMGet:         {"cachekit.MGet", "mget", true},
	OpMSet:         {"cachekit.MSet", "mset", false},
	OpMSetWithTTL:  {"cachekit.MSetWithTTL", "mset", false},
	OpDelete:       {"cachekit.Delete", "delete", false},
	OpExists:       {"cachekit.Exists", "exists", false},
	OpTTL:          {"cachekit.TTL", "ttl", false},
	OpTouch:        {"cachekit.Touch", "touch", false},
	OpGetOrLoad:    {"cachekit.GetOrLoad", "get_or_load", true},
	OpMGetOrLoad:   {"cachekit.MGetOrLoad", "mget_or_load", true},
}

// Outcome is how an operation ended (the "outcome" attribute).
type Outcome uint8

// The outcomes.
const (
	OK        Outcome = iota // a write or command succeeded
	Hit                      // a read found the entry
	Miss                     // a read found nothing (ErrNotFound)
	NotStored                // a conditional write's condition did not hold
	Degraded                 // Redis failed and FailOpen absorbed it
	Loaded                   // a read missed and the loader's value was returned
	Failed                   // the caller got an error
	// NegativeHit: a read found a cached "not found" (a negative entry)
	// and returned it without a load.
	NegativeHit
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "hit", "miss", "not_stored", "degraded", "loaded", "error", "negative_hit"}

// Tier is the tier attribute: which tier answered a read or took a write
// (None when no tier did: a miss, or an error before any I/O).
type Tier uint8

// The tiers.
const (
	None Tier = iota
	L1
	L2
	numTiers
)

var tierNames = [numTiers]string{"none", "l1", "l2"}

// TierNamed is the Tier called name ("l1", "l2"), None for any other.
func TierNamed(name string) Tier {
	switch name {
	case "l1":
		return L1
	case "l2":
		return L2
	}
	return None
}

// Class is the "error.type" attribute of a failed operation: what a caller
// would branch on, never the error's text.
type Class uint8

// The error classes.
const (
	NoClass Class = iota
	Canceled
	Deadline
	Closed
	CircuitOpen
	Overloaded
	Redis
	Auth
	Format
	WrongType
	Invalid
	Provider
	Loader
	Other
	// OutcomeUnknown: a write whose bytes may have reached Redis (its
	// outcome is unknown; Errors.OutcomeUnknown names the owner's error).
	OutcomeUnknown
	numClasses
)

var classNames = [numClasses]string{"", "canceled", "deadline_exceeded", "closed", "circuit_open", "overloaded",
	"redis", "auth_failed", "format", "wrong_type", "invalid_argument", "key_provider", "loader", "other",
	"outcome_unknown"}

// String returns the class's error.type value ("" for NoClass).
func (c Class) String() string { return classNames[c] }

// Result is what an operation reports to End besides its error.
type Result struct {
	Size int     // value bytes read or written (msgpack payload)
	Tier Tier    // the tier that answered a read or took a write
	Out  Outcome // NotStored, Degraded or Loaded when err is nil; else derived
	// LoaderFailed: err is the loader's own error (error.type "loader").
	LoaderFailed bool
}
