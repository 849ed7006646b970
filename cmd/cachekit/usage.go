package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// command is one subcommand: its name, argument shape, help text, extra flags
// and implementation.
type command struct {
	name     string
	synopsis string // arguments after the name, for usage lines
	summary  string // one line for the command list
	help     string // paragraph(s) for `cachekit <name> -h`
	examples []string
	minArgs  int
	maxArgs  int
	flags    func(fs *flag.FlagSet, g *globalFlags) // command-specific flags, or nil
	run      func(ctx context.Context, e *env, g *globalFlags, args []string) error
	timeout  time.Duration // bound of the command's Redis work; 0: commandTimeout
}

// commands is the command table, in the order `cachekit -h` lists them.
var commands []*command

func init() {
	commands = []*command{cmdGet, cmdSet, cmdDel, cmdExists, cmdTTL, cmdInspect, cmdKey, cmdKeygen, cmdScan, cmdStats, cmdRotate, cmdFlush, cmdVersion}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

const globalHelp = `Flags accepted by every command, before or after the arguments:
  --redis URL        Redis URL (default $CACHEKIT_REDIS_URL, else redis://127.0.0.1:6379/0)
  --secure           encryption on: current key from $CACHEKIT_MASTER_KEY (64 hex digits),
                     decrypt-only previous keys from $CACHEKIT_PREVIOUS_MASTER_KEYS
                     (comma-separated). The variables alone never turn encryption on.
                     With $CACHEKIT_NAME_KEY (64 hex digits) set, KEY of get, set, del,
                     exists, ttl and inspect is the application's key: the command uses
                     its opaque name (get, set and inspect need --secure)
  --tenant NAME      tenant the keys and AAD are bound to (default "default")
  --prefix PREFIX    the key prefix the application's client uses
  --interop          KEY is an interop/v1 key ("ns:op:<hash>", see "cachekit key");
                     values are canonical msgpack every CacheKit SDK reads
  --no-compression   entries are plain msgpack (the client's DisableCompression)
Use "--" before a KEY that starts with '-'.`

const jsonHelp = `Values are JSON: object <-> map, array <-> array, string, true/false, null,
integers exact over the full int64/uint64 range, numbers with '.', 'e' or 'E'
<-> float64, {"$bytes":"<hex>"} <-> msgpack bin. Output only: maps with
non-string keys print as {"$map":[[k,v],...]}, extensions as
{"$ext":{"type":n,"data":"<hex>"}}, NaN/Inf as {"$float":"NaN"|"+Inf"|"-Inf"}.`

const exitHelp = `Exit codes: 0 ok, 1 not found, 2 usage or configuration error,
3 integrity or authentication failure (tampered, wrong key or tenant, entry moved
from another key, unreadable entry, not a CacheKit entry), 4 Redis unavailable,
5 rotate could not re-seal some entries (or was interrupted).`

// printMainUsage writes `cachekit -h`.
func printMainUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("cachekit: inspect and manage CacheKit entries in Redis.\n\n")
	b.WriteString("Usage:\n  cachekit <command> [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\n" + globalHelp + "\n\n" + jsonHelp + "\n\n" + exitHelp + "\n\n")
	b.WriteString(`Examples:
  export CACHEKIT_REDIS_URL=redis://127.0.0.1:6379/0
  cachekit set user:42 '{"name":"Ada","id":18446744073709551615}' --ttl 1h
  cachekit get user:42
  export CACHEKIT_MASTER_KEY=$(cachekit keygen)
  cachekit set session:7 '{"token":{"$bytes":"deadbeef"}}' --secure --tenant acme
  cachekit inspect session:7 --secure --tenant acme
  cachekit get "$(cachekit key --namespace users --operation get_user --args '[42]')" --interop

Run "cachekit <command> -h" for a command's flags and examples.
`)
	_, _ = io.WriteString(w, b.String())
}

// printCommandUsage writes `cachekit <command> -h`.
func printCommandUsage(w io.Writer, c *command) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: cachekit %s\n\n%s\n", c.synopsis, c.help)
	if c.flags != nil {
		fs := newFlagSet(c.name)
		c.flags(fs, new(globalFlags))
		b.WriteString("\nFlags of this command:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	b.WriteString("\n" + globalHelp + "\n\n" + exitHelp + "\n\nExamples:\n")
	for _, ex := range c.examples {
		b.WriteString("  " + ex + "\n")
	}
	_, _ = io.WriteString(w, b.String())
}
