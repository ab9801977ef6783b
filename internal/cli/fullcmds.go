package cli

import (
	"context"
	"flag"
	"io"
	"time"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
)

// Full is what huddle-full adds to huddle (docs/ARCHITECTURE.md, "Two
// binaries"): the runs of the commands that link the runtime, the screen,
// the model SDKs or a server. Their flags and help are in this package's
// command table like every other command's, so huddle checks them and
// prints help itself; a run reaches Full through its Cmdline. In huddle,
// Full is handOver, which executes huddle-full with the same command
// line; in huddle-full (internal/cli/full) it runs them.
type Full interface {
	Up(cl *Cmdline, o *UpFlags) int
	Attach(cl *Cmdline, o *NotifyFlags) int
	Call(cl *Cmdline, o *CallFlags) int
	Claude(cl *Cmdline, o *ClaudeFlags) int
	Serve(cl *Cmdline, o *ServeFlags) int
	MCP(cl *Cmdline, o *MCPFlags) int
	SSH(cl *Cmdline, o *SSHFlags) int
	Replay(cl *Cmdline, speed float64) int
	// NoCommand is huddle alone on a terminal: the team of the
	// directory or of $HUDDLE_STORE, else the demo (--keep: the demo,
	// its directory kept).
	NoCommand(keep bool, stdin io.Reader, stdout, stderr io.Writer) int
	// OpenStore connects to the team kept in NATS at url (credentials
	// in the file creds when not ""), within OpenTimeout.
	OpenStore(ctx context.Context, url, creds string) (store.Store, error)
	// ExportTraces starts exporting the process's invocation spans when
	// the OpenTelemetry variables ask for it (trace.ExportWanted), and
	// returns what flushes them.
	ExportTraces(stderr io.Writer) (stop func())
}

// NotifyFlags are the flags of the commands that watch a team for a
// person: up, attach and desk.
type NotifyFlags struct {
	Kinds, URL string
	JSON       bool
}

// EnvNotifyURL is --notify-url's default: a URL that carries a token is
// better kept out of the shell's history.
const EnvNotifyURL = "HUDDLE_NOTIFY_URL"

// notifySynopsis is the notification flags in a usage line.
const notifySynopsis = "[--notify KINDS] [--notify-url URL [--notify-json]]"

// notifyAbout is what the help of a command that takes them says of them.
const notifyAbout = "A person is told of each plan and permission that waits for the lead and each crash,\n" +
	"once, besides the screen: the terminal's own notification (OSC 9 and 777) and bell, the\n" +
	"desktop's (notify-send, in a desktop session) and, with --notify-url, a POST to a\n" +
	"webhook (ntfy's plain text with Title and Tags headers, or --notify-json) carrying the\n" +
	"member, the kind, its first line and the command that shows it. --notify off: none."

func addNotifyFlags(fs *flag.FlagSet) *NotifyFlags {
	o := &NotifyFlags{}
	fs.StringVar(&o.Kinds, "notify", "all", "what to be told of, each once, besides the screen: `KINDS` of plan, permission and crash, comma-separated, or all or off")
	fs.StringVar(&o.URL, "notify-url", "", "also POST each to this `URL`, as ntfy reads it (default $"+EnvNotifyURL+"; off by default)")
	fs.BoolVar(&o.JSON, "notify-json", false, "with --notify-url: post a JSON object (team, kind, member, id, line, show, at, title) instead")
	return o
}

const sshAbout = "Serve the team's screen over SSH, so a lead approves from a phone's SSH client or another\n" +
	"machine: each session is the lead under its key's name (the comment of its authorized_keys\n" +
	"line, recorded as who decided: lead:NAME), with the keys of the screen huddle attach shows.\n" +
	"Only public keys are accepted: those of --authorized-keys may decide, those of\n" +
	"--read-only-keys see the team and decide nothing. Both files are read again at each login.\n" +
	"The host key is --host-key, made (ed25519) when missing. The team runs elsewhere (huddle up).\n" +
	"Ctrl-C, SIGTERM or SIGHUP stops the server and its sessions."

const claudeSynopsis = "teams | status [TEAM] [--json] | requests [TEAM] [--all] [--json] | attach [TEAM] [--experimental-permissions] | watch [--background]  [--root DIR]"

const claudeAbout = "Show a Claude Code agent team (ROOT/teams/TEAM/, ROOT/tasks/TEAM/) as huddle shows its own.\n" +
	"ROOT is --root, else $CLAUDE_CONFIG_DIR, else ~/.claude. With exactly one team, TEAM may be\n" +
	"left out.\n" +
	"  teams      the teams under ROOT\n" +
	"  status     each member: idle, working, stopped or unknown, from its idle notifications and\n" +
	"             inbox traffic, and its task in progress\n" +
	"  requests   pending plan, permission and shutdown requests (--all: the answered ones too)\n" +
	"  attach     the UI on the team, live. a/r answer permission requests only with\n" +
	"             --experimental-permissions; plans and shutdowns are the lead's\n" +
	"  watch      journal every team under ROOT until stopped (--background: from a process of its\n" +
	"             own, for a SessionStart hook)\n" +
	"Claude Code deletes the messages it delivered and removes a team when its session ends; every\n" +
	"command here keeps what it saw in huddle's journal (huddle/claude-journal/ in the user's\n" +
	"configuration directory), so status, requests --all and attach show a team after that.\n" +
	"huddle never flips a read flag or rewrites a message; its appends take Claude Code's inbox\n" +
	"lock (docs/claude-teams.md). It cannot shut a member down (Claude Code marks what another\n" +
	"process appends verified=\"false\", and a teammate refuses a shutdown not from its own lead),\n" +
	"nor gate a plan: the lead's session approves its teammates' plans by itself."

// UpFlags are huddle up's flags.
type UpFlags struct {
	Headless, AutoApprove bool
	Members               string
	Notify                *NotifyFlags
}

func upFlags(fs *flag.FlagSet) runFunc {
	var o UpFlags
	fs.BoolVar(&o.Headless, "headless", false, "print one JSON event per line on stdout instead of the UI")
	fs.BoolVar(&o.AutoApprove, "auto-approve", false, "approve every teammate's plan as it arrives, without the lead")
	fs.StringVar(&o.Members, "members", "", "with --store, run only these members (`a,b`; default: every member, those another process runs as soon as their leases end), and the lead when no other process runs it; --dir then keeps only this machine's files")
	o.Notify = addNotifyFlags(fs)
	return func(cl *Cmdline) int { return cl.full.Up(cl, &o) }
}

func attachFlags(fs *flag.FlagSet) runFunc {
	no := addNotifyFlags(fs)
	return func(cl *Cmdline) int { return cl.full.Attach(cl, no) } // --dir, or --store and --nats-creds
}

// CallFlags are huddle call's flags.
type CallFlags struct {
	Target, Action, Prompt string
	Caller                 string
	Timeout, Hop           int
	CorrelationID          string
	Config                 string
}

func callFlags(fs *flag.FlagSet) runFunc {
	var o CallFlags
	fs.StringVar(&o.Target, "target", "", "the member to invoke (required)")
	fs.StringVar(&o.Action, "action", "", "the action to run (required)")
	fs.StringVar(&o.Prompt, "prompt", "", "what to ask (required)")
	fs.StringVar(&o.Caller, "caller", "", "who calls (default: the config's owner)")
	fs.IntVar(&o.Timeout, "timeout", 0, "seconds to wait for the answer (default: the config's default_timeout_sec)")
	fs.IntVar(&o.Hop, "hop", 0, "delegation depth of this call (0: the first)")
	fs.StringVar(&o.CorrelationID, "correlation-id", "", "join an existing correlation chain (default: a new one)")
	fs.StringVar(&o.Config, "config", ipc.ConfigFile, "the caller's IPC config")
	return func(cl *Cmdline) int { return cl.full.Call(cl, &o) }
}

// ClaudeFlags are huddle claude's flags.
type ClaudeFlags struct {
	Root        string
	JSON, All   bool
	Permissions bool
	Background  bool
}

func claudeFlags(fs *flag.FlagSet) runFunc {
	var o ClaudeFlags
	fs.StringVar(&o.Root, "root", "", "Claude Code's configuration `directory` ($CLAUDE_CONFIG_DIR, else ~/.claude)")
	fs.BoolVar(&o.JSON, "json", false, "status, requests, teams: print JSON")
	fs.BoolVar(&o.All, "all", false, "requests: the answered ones too")
	fs.BoolVar(&o.Permissions, "experimental-permissions", false, "attach: let a and r answer permission requests (experimental: see the README)")
	fs.BoolVar(&o.Background, "background", false, "watch: journal from a process of its own and return at once (for a SessionStart hook)")
	return func(cl *Cmdline) int { return cl.full.Claude(cl, &o) }
}

// ServeFlags are huddle serve's flags.
type ServeFlags struct {
	Addr, KeysFile, Config string
	MaxRunning             int
	Keep                   time.Duration
	A2A                    bool
}

func serveFlags(fs *flag.FlagSet) runFunc {
	var o ServeFlags
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:7420", "where to listen; without --api-keys-file only a loopback address")
	fs.StringVar(&o.KeysFile, "api-keys-file", "", "API keys, one \"KEY CALLER-ID\" per line; every request then needs one")
	fs.StringVar(&o.Config, "config", "", "the .puruto-ipc.json that governs HTTP callers (default: DIR/.puruto-ipc.json)")
	fs.IntVar(&o.MaxRunning, "max-running", 64, "executions running at once; more get 429 with a retry hint")
	fs.DurationVar(&o.Keep, "keep", time.Hour, "how long finished executions (and A2A tasks) stay answerable")
	fs.BoolVar(&o.A2A, "a2a", false, "serve A2A v1.0 beside the Blueprint: the Agent Card at "+protocol.A2ACardPath+", JSON-RPC at /a2a")
	return func(cl *Cmdline) int { return cl.full.Serve(cl, &o) }
}

// MCPFlags are huddle mcp's flags.
type MCPFlags struct {
	Addr, KeysFile, Config, Caller, Decide string
	Keep                                   time.Duration
}

func mcpFlags(fs *flag.FlagSet) runFunc {
	var o MCPFlags
	fs.StringVar(&o.Addr, "addr", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio; without --api-keys-file only a loopback address")
	fs.StringVar(&o.KeysFile, "api-keys-file", "", "API keys, one \"KEY CALLER-ID\" per line (as huddle serve's); every HTTP request then needs one")
	fs.StringVar(&o.Config, "config", "", "the .puruto-ipc.json that governs the callers (default: DIR/.puruto-ipc.json)")
	fs.StringVar(&o.Caller, "caller", "mcp", "who calls over stdio, or over HTTP without keys")
	fs.StringVar(&o.Decide, "decide", "", "callers the lead lets approve and reject, comma-separated (default: none)")
	fs.DurationVar(&o.Keep, "keep", time.Hour, "how long an ended task stays answerable")
	return func(cl *Cmdline) int { return cl.full.MCP(cl, &o) }
}

// SSHFlags are huddle ssh's flags.
type SSHFlags struct {
	Addr, AuthorizedKeys, ReadOnlyKeys, HostKey string
}

func sshFlags(fs *flag.FlagSet) runFunc {
	var o SSHFlags
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:2222", "the `ADDRESS` to listen on (0.0.0.0:2222 for other machines)")
	fs.StringVar(&o.AuthorizedKeys, "authorized-keys", "", "the authorized_keys `FILE` of the keys that may decide (required, unless --read-only-keys)")
	fs.StringVar(&o.ReadOnlyKeys, "read-only-keys", "", "an authorized_keys `FILE` of keys that may only watch")
	fs.StringVar(&o.HostKey, "host-key", "", "the server's private key `FILE` (default: ssh_host_ed25519 in huddle's configuration directory)")
	return func(cl *Cmdline) int { return cl.full.SSH(cl, &o) }
}

func replayFlags(fs *flag.FlagSet) runFunc {
	speed := fs.Float64("speed", 1, "seconds of the session per second on screen (idle spells last at most 2s)")
	return func(cl *Cmdline) int { return cl.full.Replay(cl, *speed) }
}
