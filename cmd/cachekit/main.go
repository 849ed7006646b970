// Command cachekit is the operators' tool for CacheKit entries in Redis: it
// reads and writes values through the cachekit client (so it sees exactly what
// applications see), explains stored bytes (encryption, keyring entry, nonce,
// envelope, value), computes interop keys and makes master keys.
//
// Usage:
//
//	cachekit <command> [flags] [arguments]
//
// Run `cachekit -h` for the commands and `cachekit <command> -h` for each
// command's flags and examples. Exit codes: 0 ok, 1 not found, 2 usage or
// configuration error, 3 integrity or authentication failure, 4 Redis
// unavailable, 5 rotate could not re-seal some entries. Errors go to stderr
// on one line and never contain key material, values or secrets.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
)

// commandTimeout bounds one invocation's Redis work.
const commandTimeout = 30 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// env is what a command may touch of the outside world.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// run executes one command line and returns the exit code.
func run(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		printVersion(stdout)
		return exitOK
	}
	name, rest := splitCommand(args)
	switch name {
	case "":
		if slices.ContainsFunc(args, isHelp) {
			printMainUsage(stdout)
			return exitOK
		}
		return fail(stderr, usageErrorf("missing command (run `cachekit -h` for the list)"))
	case "help":
		if len(rest) > 0 {
			if cmd := lookup(rest[0]); cmd != nil {
				printCommandUsage(stdout, cmd)
				return exitOK
			}
		}
		printMainUsage(stdout)
		return exitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		return fail(stderr, usageErrorf("unknown command %q (run `cachekit -h` for the list)", name))
	}
	var g globalFlags
	fs := newFlagSet(cmd.name)
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs, &g)
	}
	pos, err := parseInterleaved(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(stdout, cmd)
		return exitOK
	}
	if err != nil && strings.Contains(err.Error(), "flag -ttl") {
		return fail(stderr, usageErrorf("%s: --ttl takes a Go duration such as 10m, 1h or 30s (a bare number has no unit)", cmd.name))
	}
	if err != nil {
		return fail(stderr, usageErrorf("%s: %v (see `cachekit %s -h`)", cmd.name, err, cmd.name))
	}
	if len(pos) < cmd.minArgs || len(pos) > cmd.maxArgs {
		return fail(stderr, usageErrorf("%s: usage: cachekit %s (see `cachekit %s -h`)", cmd.name, cmd.synopsis, cmd.name))
	}
	if keyCommands[cmd.name] {
		// With a name key, KEY is the application's key: the commands work
		// on the name the application's client stores it under.
		if pos[0], err = g.storedKey(getenv, cmd.name, pos[0]); err != nil {
			return fail(stderr, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	timeout := commandTimeout
	if cmd.timeout > 0 {
		timeout = cmd.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cmd.run(ctx, e, &g, pos); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// fail prints err on one line to stderr and returns its exit code.
func fail(stderr io.Writer, err error) int {
	code, msg := classify(err)
	fmt.Fprintln(stderr, "cachekit: "+msg)
	return code
}

// splitCommand finds the subcommand name, which may follow global flags
// (`cachekit --secure get KEY`), and returns it with the remaining arguments.
func splitCommand(args []string) (string, []string) {
	// Every command's flags, each set on its own FlagSet (two commands may
	// define the same flag), so that a flag's value is not taken for the
	// command name.
	sets := []*flag.FlagSet{newFlagSet("cachekit")}
	var g globalFlags
	g.register(sets[0])
	for _, c := range commands {
		if c.flags != nil {
			cfs := newFlagSet(c.name)
			c.flags(cfs, &g)
			sets = append(sets, cfs)
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return "", nil
		}
		if !looksLikeFlag(a) {
			rest := append(append([]string(nil), args[:i]...), args[i+1:]...)
			return a, rest
		}
		if isHelp(a) {
			return "", nil
		}
		for _, fs := range sets {
			if takesValue(fs, a) {
				i++
				break
			}
		}
	}
	return "", nil
}

// isHelp reports whether a asks for help.
func isHelp(a string) bool {
	switch a {
	case "-h", "--h", "-help", "--help", "help":
		return true
	}
	return false
}
