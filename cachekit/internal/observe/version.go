package observe

import (
	"runtime/debug"
	"sync"
)

// modulePath is this module's import path.
const modulePath = "github.com/cachekit-io/cachekit-go"

// Scope is the instrumentation scope of the Client's spans and metrics.
const Scope = modulePath + "/cachekit"

// ModuleVersion is this module's version as the binary's build information
// records it: the version required when cachekit-go is a dependency (the
// replacement's, when go.mod replaces it), the main module's version when
// cachekit-go is built itself ("(devel)" from a clone), "" when unknown.
// It is the version of the instrumentation scope.
var ModuleVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == modulePath {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
})
