package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

var cmdVersion = &command{
	name:     "version",
	synopsis: "version",
	summary:  "print the cachekit-go module version this command was built from",
	help: "Prints the module version from the binary's build information (a release tag\n" +
		"such as v0.1.0 for `go install ...@v0.1.0`; \"(devel)\" for a build from a clone,\n" +
		"with the VCS revision when the build recorded one) and the Go version.\n" +
		"`cachekit --version` prints the same.",
	examples: []string{"cachekit version", "cachekit --version"},
	minArgs:  0, maxArgs: 0,
	run: func(_ context.Context, e *env, _ *globalFlags, _ []string) error {
		printVersion(e.stdout)
		return nil
	},
}

// printVersion writes "cachekit VERSION [REVISION] (GOVERSION)".
func printVersion(w io.Writer) {
	version, rev, goVersion := "unknown", "", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
		if version == "" {
			version = "(devel)"
		}
	}
	fmt.Fprintf(w, "cachekit %s%s (%s)\n", version, rev, goVersion)
}
