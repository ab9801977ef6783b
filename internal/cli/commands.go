package cli

import (
	"flag"

	"huddle/team"
)

// command is one subcommand of huddle. 'huddle help', 'huddle help NAME' and
// 'huddle NAME -h' are made from these fields.
type command struct {
	name     string // huddle NAME
	synopsis string // the usage line after "huddle NAME"
	summary  string // its line in 'huddle help'
	about    string // what 'huddle help NAME' says above the flags
	teamDir  bool   // takes --dir, the team directory
	// store: runs on a store too, with --store URL and --nats-creds F
	// (store.go: cl.storeURL, cl.natsCreds, OpenStore); a teamDir command
	// without a --store flag refuses them and $HUDDLE_STORE.
	store bool
	// brief: the command runs straight through to its end (status,
	// send, approve…) and leaves Ctrl-C, SIGTERM and SIGHUP their default
	// action (Cmdline.context). The others may wait or serve, and those
	// signals end their context so that they stop cleanly.
	brief bool
	// flags defines the command's own flags on fs (--dir is added for a
	// teamDir command) and returns its run, which reads their values.
	flags func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command once its flags are parsed and returns the exit code.
type runFunc func(cl *Cmdline) int

// commands is every command, in the order a person meets them.
var commands = []command{
	{
		name: "init", synopsis: "[--dir D] [--template demo|llm] [--store URL [--nats-creds F]] | --ipc [PATH] [--owner NAME]", teamDir: true, store: true, brief: true,
		summary: "write the demo team (or --template llm) as an editable team.json (--ipc: a Puruto repo's IPC files)",
		about: "Write the demo team as team.json in the team directory, to edit into your own.\n" +
			"--template llm writes a planner, a coder and a reviewer driven by a language model instead:\n" +
			"HUDDLE_LLM_BASE_URL (default " + team.DefaultLLMBaseURL + ", a local Ollama), HUDDLE_LLM_MODEL\n" +
			"(default " + team.DefaultLLMModel + ") and HUDDLE_LLM_API_KEY_ENV (the NAME of the variable that\n" +
			"holds the key; none by default) are read now and written into team.json.\n" +
			"With --ipc, write a Puruto repo's .puruto-ipc.json and /call skill in PATH instead.\n" +
			"An existing file is never overwritten.\n" +
			"With --store, put the team in the store instead: team.json and the IPC policies, those of\n" +
			"the team in --dir when it holds one, else the template's. What the store holds already is\n" +
			"left as it is and said so.",
		flags: initFlags,
	},
	{
		name: "up", synopsis: "[--dir D] [--headless] [--auto-approve] [--store URL [--nats-creds F] [--members a,b]] " + notifySynopsis, teamDir: true, store: true,
		summary: "run the team in --dir with the UI (or --headless: JSON events)",
		about: "Run the team of the team directory in this process and show it in the UI: its members'\n" +
			"status, their messages and the plans that wait for the lead. One process runs a team at\n" +
			"a time. With --headless, print one JSON event per line on stdout instead; then a\n" +
			"terminal is not needed. Ctrl-C, SIGTERM or SIGHUP stops the team.\n" +
			"With --store, the team is kept in the store and may span machines: this process runs\n" +
			"the --members listed (default: every member, those another process runs as soon as\n" +
			"their leases end), and the lead when no other process runs it; --dir keeps only this\n" +
			"machine's files, and may be shared by several of these. The UI shows the whole team\n" +
			"in the store (huddle attach --store shows it from any other machine).\n" + notifyAbout,
		flags: upFlags,
	},
	{
		name: "attach", synopsis: storeSynopsis + " " + notifySynopsis, teamDir: true, store: true,
		summary: "open the UI on a team that another process runs",
		about: "Open the UI on the team directory of a team that another process runs (huddle up,\n" +
			"e.g. with --headless). It shows the team as it is and starts nothing; quitting the UI\n" +
			"leaves the team running. Needs a terminal.\n" +
			"With --store, open it on the team kept in the store, from any machine: the processes of\n" +
			"huddle up --store run it wherever they are, and the keys (approve, reject, send, shutdown)\n" +
			"act on the store. A member not seen within 15s that should be running shows lost.\n" + notifyAbout,
		flags: attachFlags,
	},
	{
		name: "status", synopsis: "[--dir D | --store URL [--nats-creds F] [--lost-after D]] [--json]", teamDir: true, store: true, brief: true,
		summary: "show each member's status and activity",
		about: "Show every member of team.json with its live status record: status (or \"not started\"),\n" +
			"what it is doing, and since when. On a store (--store), a member that should be running\n" +
			"and was not seen within --lost-after (its machine or process went away) shows lost.",
		flags: statusFlags,
	},
	{
		name: "logs", synopsis: "MEMBER [--transcript [--json]] [-f] " + storeSynopsis, teamDir: true, store: true,
		summary: "print a member's log, or an llm member's transcript",
		about: "Print members/MEMBER.log (what an exec member writes on stderr). With --transcript, print\n" +
			"an llm member's transcript (members/MEMBER.transcript.jsonl) one entry a line: every model\n" +
			"turn, tool call and tool result; --json prints its raw lines. With -f, keep printing what\n" +
			"is appended until Ctrl-C. On a store it prints what the runtime that runs MEMBER, on any\n" +
			"machine, copied there from its local file (the stream keeps the newest, bounded in size\n" +
			"and age; lines written while the server was away may be missing).",
		flags: logsFlags,
	},
	{
		name: "requests", synopsis: "[--all] [--limit N] [--json] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "list pending requests (--all for every one)",
		about: "List pending plan and shutdown requests, oldest first: id, kind, from → to, status,\n" +
			"age and time left before the deadline (paused while the team is not running).\n" +
			"--all lists the history after them, newest first; --limit N lists at most N.",
		flags: requestsFlags,
	},
	{
		name: "deadletters", synopsis: "[--member M] [--json] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "list the input huddle refused: who caused it, when, why",
		about:   deadLettersAbout,
		flags:   deadLettersFlags,
	},
	{
		name: "show", synopsis: "ID [--json] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "show a request, a chain, a call or an execution by its id",
		about:   showAbout,
		flags:   showFlags,
	},
	{
		name: "approve", synopsis: "ID... [--feedback TEXT] [--session] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "approve a teammate's plan, or allow its agent's permission",
		about: "Approve a teammate's pending plan, or allow a pending permission, as the lead; the\n" +
			"teammate is told at once (when the team next starts, if it is not running). A permission\n" +
			"is allowed once; with --session, what its rule covers (huddle requests shows it) is\n" +
			"allowed for the rest of the member's session without asking.\n" +
			"Several IDs are decided in turn, a line each. The first decision wins: a request\n" +
			"resolved already is said, with by whom, and the others still go in; exit 1 then.",
		flags: approveFlags,
	},
	{
		name: "reject", synopsis: "ID... --feedback TEXT " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "reject a teammate's plan, or deny a permission, with feedback",
		about: "Reject a teammate's pending plan (or deny a permission) as the lead, saying what to\n" +
			"change or why not; the teammate is told at once (when the team next starts, if it is\n" +
			"not running) and revises, or its agent reads why. Several IDs all get the same\n" +
			"feedback, a line each. The first decision wins: a request resolved already is said,\n" +
			"with by whom, and the others still go in; exit 1 then.",
		flags: rejectFlags,
	},
	{
		name: "review", synopsis: "ID [--json] [--changes TEXT [--comment PATH:LINE:TEXT]...] [--discard [--yes]] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "show a coding teammate's change (review ID), send it back with changes, or discard it",
		about:   reviewAbout,
		flags:   reviewFlags,
	},
	{
		name: "merge", synopsis: "ID " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "merge a reviewed change into its base branch",
		about:   mergeAbout,
		flags:   mergeFlags,
	},
	{
		name: "diff", synopsis: "MEMBER [--stat] [--json] [--dir D | --store URL [--nats-creds F]]", teamDir: true, store: true, brief: true,
		summary: "print what a coding teammate's worktree changed against its base",
		about:   diffAbout,
		flags:   diffFlags,
	},
	{
		name: "shutdown", synopsis: "MEMBER [--reason TEXT] [--wait [--timeout D]] " + storeSynopsis, teamDir: true, store: true,
		summary: "ask a teammate to shut down",
		about: "Ask a teammate to shut down and print the request id. The teammate answers: it may\n" +
			"refuse while busy. A member that is already stopped gets a request cancelled at once.\n" +
			"With --wait, wait for the answer and print it (\"approved by M: …\", \"refused by M: …\",\n" +
			"\"expired: …\", \"cancelled: …\"); exit 0 when the teammate agreed, 1 otherwise, also when\n" +
			"--timeout passes first. While the team is not running its deadline is paused, so without\n" +
			"--timeout the wait lasts until the team runs again and the teammate answers.",
		flags: shutdownFlags,
	},
	{
		name: "restart", synopsis: "MEMBER [--timeout D] " + storeSynopsis, teamDir: true, store: true,
		summary: "run a stopped or crashed member again, in the runtime that runs the team",
		about: "Ask the runtime that runs the team (huddle up) to run a stopped or crashed member again,\n" +
			"and wait until it has (--timeout, default 10s). It asks by writing restart/MEMBER in the team\n" +
			"directory, which the runtime reads within half a second. Without a runtime it says so and\n" +
			"exits 1: 'huddle up' starts every member. A member that runs is not restarted (exit 1).\n" +
			"On a store it asks through the key restart.MEMBER, which the runtime that holds MEMBER's\n" +
			"lease, on any machine, takes within its tick; no lease holder: one line, exit 1.",
		flags: restartFlags,
	},
	{
		name: "send", synopsis: "MEMBER TEXT... [--from NAME] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "send a message to a member",
		about: "Append a message to a member's inbox. The words of TEXT are joined by spaces;\n" +
			"put -- before text that starts with a dash.",
		flags: sendFlags,
	},
	{
		name: "broadcast", synopsis: "TEXT... [--from NAME] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "send a message to every member",
		about: "Append a message to the inbox of every member but the sender. The words of TEXT are\n" +
			"joined by spaces; put -- before text that starts with a dash.",
		flags: broadcastFlags,
	},
	{
		name:     "call",
		synopsis: "--target T --action A --prompt P [--caller C] [--timeout S] [--hop N] [--correlation-id ID] [--config PATH] " + storeSynopsis,
		teamDir:  true, store: true,
		summary: "invoke a target's action under the caller's .puruto-ipc.json (Puruto's ipc.py)",
		about: "Invoke an action of a member of the team in the team directory and wait for its answer,\n" +
			"as the caller whose .puruto-ipc.json is --config: its allowlists, hop limit and default\n" +
			"timeout apply. The /call skill that 'huddle init --ipc' writes runs this command. The\n" +
			"call goes into the team's traces.\n" +
			"With --store, the team is the one kept in the store: the request goes to the target's\n" +
			"inbox there, the answer is awaited on the caller's, the spans go to the store's traces,\n" +
			"and the caller's policy is the store's ipc/CALLER.puruto-ipc.json (without --caller, its\n" +
			".puruto-ipc.json) unless --config is given.\n" +
			"Prints {\"request\": …, \"response\": …} as JSON. Exit status: 0 when the response is ok;\n" +
			"1 when it is an error (denied, unknown target, timeout, …); 2 on bad arguments.",
		flags: callFlags,
	},
	{
		name: "invoke", synopsis: invokeSynopsis,
		summary: "call a skill on a Blueprint HTTP server (e.g. huddle serve) and print its result",
		about:   invokeAbout,
		flags:   invokeFlags,
	},
	{
		name: "serve", synopsis: "[--addr 127.0.0.1:7420] [--a2a] [--dir D] [--api-keys-file F] [--config PATH] [--max-running N] [--keep D] [--store URL [--nats-creds F]]", teamDir: true, store: true,
		summary: "expose the team's actions as skills over HTTP (invoke → status → result; --a2a: A2A v1.0 too)",
		about: "Expose the actions of the team in the team directory as skills over HTTP, by the\n" +
			"Blueprint protocol (POST /invoke, GET /status/ID, GET /result/ID); a skill is\n" +
			"<member>.<action>. To the outside the team is one Puruto: HTTP callers are governed by\n" +
			"its .puruto-ipc.json (--config).\n" +
			"With --store, the team is the one kept in the store: its members are invoked wherever\n" +
			"they run, HTTP callers are governed by the store's .puruto-ipc.json unless --config is\n" +
			"given, and the executions stay in --dir, this machine's local directory.\n" +
			"With --a2a, the same listener also speaks A2A v1.0 (docs/doors.md): the Agent Card at\n" +
			"/.well-known/agent-card.json lists the skills, JSON-RPC at /a2a runs a task as one\n" +
			"invocation (metadata skill_id names the skill), and a task whose member's plan waits for\n" +
			"the lead is INPUT_REQUIRED with the plan until the lead decides it.\n" +
			"Without --api-keys-file it listens only on a loopback address. Ctrl-C, SIGTERM or SIGHUP\n" +
			"stops it.",
		flags: serveFlags,
	},
	{
		name: "mcp", synopsis: "[--addr ADDR [--api-keys-file F]] [--caller NAME] [--decide CALLERS] [--dir D] [--config PATH] [--keep D] [--store URL [--nats-creds F]]", teamDir: true, store: true,
		summary: "open the team to MCP clients (Claude Code, Codex, crush): its members, calls, requests as tools",
		about: "Serve the team in the team directory as MCP tools, over stdio (an MCP client starts\n" +
			"huddle mcp as its server) or, with --addr, streamable HTTP at /mcp (docs/doors.md):\n" +
			"members, send_message, call_action (a member's action, as huddle call makes it; a long\n" +
			"call may be an MCP task, input_required while the member's plan waits for the lead),\n" +
			"requests and request. approve and reject are there only for the callers --decide names\n" +
			"(none by default): only the lead decides plans unless the lead allows a caller.\n" +
			"Callers are governed by the team's .puruto-ipc.json (--config), as huddle serve's are;\n" +
			"over stdio, and over HTTP without keys, the caller is --caller; with --api-keys-file\n" +
			"(as huddle serve's, the key as X-API-Key or Authorization: Bearer) the key's owner.\n" +
			"Without --api-keys-file it listens only on a loopback address. Logs go to stderr.",
		flags: mcpFlags,
	},
	{
		name: "broker", synopsis: "[--addr 127.0.0.1:4222] [--data DIR] [--token-file F]",
		summary: "run a NATS server with JetStream on this machine, for teams kept in NATS",
		about: "Run an embedded NATS server with JetStream, for one machine, a demo or the tests, and\n" +
			"print the store URL of a team kept in it: nats://HOST:PORT/TEAM (a real NATS cluster's URL\n" +
			"serves as well). JetStream keeps the streams and buckets in --data. Without\n" +
			"--token-file it listens only on a loopback address; with it, every client must present\n" +
			"the token (nats://TOKEN@HOST:PORT/TEAM). A busy address is an error. Ctrl-C, SIGTERM or\n" +
			"SIGHUP stops it. The commands that take --store run on a team kept in it (README, \"A team\n" +
			"on two machines\"). The server is the huddle-broker binary (go install ./cmd/huddle-broker),\n" +
			"found beside huddle, else on PATH: huddle itself does not link it.",
		flags: brokerFlags,
	},
	{
		name: "ssh", synopsis: "--authorized-keys FILE [--read-only-keys FILE] [--addr ADDRESS] [--host-key FILE] " + storeSynopsis, teamDir: true, store: true,
		summary: "serve the team's screen over SSH: approve from a phone or another machine",
		about:   sshAbout,
		flags:   sshFlags,
	},
	{
		name: "worktrees", synopsis: "[list] [--json] | prune [--yes] | finish MEMBER [--yes] [--dir D | --store URL [--nats-creds F]]", teamDir: true, store: true, brief: true,
		summary: "list the coding teammates' git worktrees (size, ahead/behind, in use); prune the orphans",
		about:   worktreesAbout,
		flags:   worktreesFlags,
	},
	{
		name: "traces", synopsis: storeSynopsis + " [--correlation ID] [--json]", teamDir: true, store: true, brief: true,
		summary: "show the invocation chains as trees, newest first",
		about: "Show the invocation chains of the team's traces.jsonl, newest first: a header per chain,\n" +
			"then one line per call, indented by its depth in the chain (caller → target.action,\n" +
			"hop, status, duration). Lines that are not valid spans are skipped and counted.",
		flags: tracesFlags,
	},
	{
		name: "claude", synopsis: claudeSynopsis,
		summary: "show a Claude Code agent team (teams, status, requests, attach) and journal what it saw (watch)",
		about:   claudeAbout,
		flags:   claudeFlags,
	},
	{
		name: "desk", synopsis: "[--desk DESK] [--settings [--codex]] " + notifySynopsis,
		summary: "the desk: your own Claude Code and Codex sessions' permission prompts, decided on one screen",
		about:   deskAbout + "\n" + notifyAbout,
		flags:   deskFlags,
	},
	{
		name: "hook", synopsis: "claude|codex [--desk DESK] [--wait D]",
		summary: "a Claude Code or Codex PermissionRequest hook that asks the desk (see 'huddle help desk')",
		about:   hookAbout,
		flags:   hookFlags,
	},
	{
		name: "validate", synopsis: "PATH [--json]",
		summary: "check the IPC setup of a Puruto repo, a team or a config file",
		about: "Check the IPC setup at PATH as Puruto's validate.py does, with huddle's additions:\n" +
			"  a directory with team.json  team.json itself, every member's IPC config, and allowlists\n" +
			"                              against the roster (PATH may name the team.json too)\n" +
			"  another directory           a Puruto repo: .puruto-ipc.json, the /call skill, a runtime\n" +
			"  a file                      an IPC config (a .puruto-ipc.json also needs its skill and runtime)\n" +
			"Huddle is the runtime when the /call skill runs `huddle call` (what 'huddle init --ipc' writes);\n" +
			"otherwise ipc.py and invoker.py must be there.\n" +
			"Exit 0 without errors (warnings allowed), 1 with errors, 2 on bad arguments.",
		flags: validateFlags,
	},
	{
		name: "export", synopsis: "[DIR] [-o FILE] " + storeSynopsis, teamDir: true, store: true, brief: true,
		summary: "write a team's history as one JSON-lines file that replay plays",
		about: "Write the history of the team directory DIR (default --dir) as one self-contained file:\n" +
			"a header line (format, version, export time and team.json), then one event per line in\n" +
			"time order: member status changes, request transitions, messages and call spans. Attach\n" +
			"it to a bug report; 'huddle replay FILE' plays it on any machine. Reads only.\n" +
			"With --store, write the history of the team kept in the store: every request's transitions\n" +
			"(archived ones too), the spans and each member's current status at its since. Its header's\n" +
			"\"store\" field says what it leaves out: the status histories (local to each machine), the\n" +
			"messages the store no longer holds (NATS removes what a member's consumer committed; those\n" +
			"still in the inboxes are in, read without taking them), spans past the store's age limit,\n" +
			"and the logs. It never shows the URL's credentials.",
		flags: exportFlags,
	},
	{
		name: "replay", synopsis: "[DIR|FILE] [--speed N] " + storeSynopsis, teamDir: true, store: true,
		summary: "play a team's history (a team directory, an export or a store) in the UI, read-only",
		about: "Play the history of a team directory, or of a file 'huddle export' wrote, in the UI as it\n" +
			"happened, read-only. --speed N plays N seconds of the session per second (default 1); an\n" +
			"idle spell lasts at most 2s on screen. Keys: space pause/play, →/n step, ←/p step back,\n" +
			"+/- speed ×2 ÷2, g/G start/end; a, r, s, m, b and R do nothing. Needs a terminal.\n" +
			"With --store, play the history of the team kept in the store, as 'huddle export --store'\n" +
			"writes it (read once, when it starts; what it leaves out: 'huddle help export').",
		flags: replayFlags,
	},
	{
		name: "agent", synopsis: "echo [--misbehave N] | claude|codex --task TEXT [--bin PATH] [-- CLI-ARGS...]",
		summary: "built-in exec teammates: echo, and Claude Code and Codex behind the plan gate",
		about: "Run a built-in exec teammate on stdin and stdout. 'echo' answers every message with an echo\n" +
			"and every invocation with \"audited: PROMPT\", and approves every shutdown (the demo's auditor).\n" +
			"'claude' and 'codex' drive Claude Code (one claude -p on its stream-json control protocol) or\n" +
			"Codex (one codex app-server) for the member's session: the CLI plans the task read-only and\n" +
			"the plan goes to the lead; a rejection revises it on the same session; only after approval\n" +
			"may it change anything, and each tool use it asks permission for is a permission request\n" +
			"(decided by team.json's rules, the session's allowances or the lead). Its tools become the\n" +
			"member's activity, its tokens and cost the member's counters, its final answers messages.\n" +
			"Arguments after '--' go to the CLI.\n" +
			"docs/agents.md has the commands it runs and what is verified.\n" +
			"In team.json: \"runtime\": {\"kind\": \"exec\", \"command\": [\"huddle\", \"agent\", \"claude\", \"--task\", \"TEXT\"]}.",
		flags: agentFlags,
	},
	{
		name: "version", synopsis: "[--json]",
		summary: "print huddle's version, commit and Go version (also: huddle --version)",
		about: "Print the version this binary was built as, from what the Go toolchain recorded in it:\n" +
			"the module version ((devel) when built from a checkout), the commit, its time and whether\n" +
			"the tree had uncommitted changes, and the Go version. go run records no commit.",
		flags: versionFlags,
	},
	{
		name: "completion", synopsis: "bash|zsh|fish",
		summary: "print a shell completion script: commands, flags, members and request ids",
		about:   completionAbout,
		flags:   completionFlags,
	},
}

// lookup is the command called name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}
