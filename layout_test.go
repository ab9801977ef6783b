package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports is the package map of docs/ARCHITECTURE.md, "Packages": what each of our
// packages may import of ours. A package missing here fails the test, so a
// new package is placed on the map when it is made.
var allowedImports = map[string][]string{
	"protocol":  {},
	"teamdir":   {"protocol"},
	"inbox":     {"protocol", "teamdir"},
	"ipc/trace": {"protocol", "teamdir"},
	"llm":       {"protocol", "internal/sandbox", "llm/record"},
	// What an llm member leaves for others to read (transcript entries,
	// usage, tool names), without the model SDKs.
	"llm/record":    {},
	"ipc":           {"protocol", "teamdir", "inbox", "ipc/trace"},
	"ipc/blueprint": {"protocol", "teamdir", "inbox", "ipc/trace", "ipc"},
	// A2A v1.0: its wire, a server of tasks run as invocations, a client
	// and a target that call any A2A agent.
	"ipc/a2a": {"protocol", "ipc/trace", "ipc", "ipc/blueprint"},
	// What a team is, its records and the lead's operations, on a store.
	"team": {"protocol", "teamdir", "ipc", "llm/record", "store", "permit", "internal/dirwatch", "internal/suggest", "worktree"},
	// The runtime: leases, the teammates, deadlines, invocations, logs.
	"team/supervisor": {"protocol", "teamdir", "inbox", "ipc/trace", "ipc", "ipc/blueprint", "ipc/a2a", "llm", "store", "team", "permit", "internal/procenv", "worktree", "internal/redact"},
	// A store folded into the Snapshots a UI draws.
	"team/view": {"protocol", "ipc/trace", "store", "team"},
	// The backend huddle serve exposes.
	"team/serve": {"protocol", "teamdir", "inbox", "ipc", "ipc/blueprint", "ipc/a2a", "store", "team", "team/supervisor"},
	// huddle mcp: the team as MCP tools, its calls as MCP tasks.
	"team/mcpserve": {"protocol", "ipc/trace", "ipc/blueprint", "ipc/a2a", "store", "team", "team/serve"},
	"claudeteam":    {"protocol", "teamdir", "team", "team/view"},
	"replay":        {"protocol", "teamdir", "ipc/trace", "team", "team/view", "store"},
	"agents":        {"protocol", "team", "store/filestore"},
	"tui":           {"protocol", "ipc/trace", "team", "team/view", "replay", "store", "notify", "worktree", "internal/highlight"},
	// What a person is told of (a request waits, a member crashed), on
	// the terminal, the desktop and a webhook.
	"notify": {"protocol", "team/view"},
	// huddle: every command's flags and help, and the runs of the light
	// ones; it links no runtime, screen, model SDK or server (Full).
	"internal/cli": {"internal/suggest", "protocol", "teamdir", "inbox", "ipc/trace", "ipc", "ipc/blueprint", "team", "team/view", "claudeteam", "replay", "agents", "store", "store/filestore", "store/natsurl", "worktree"},
	// huddle-full: the runs of the commands that need them.
	"internal/cli/full": {"internal/cli", "notify", "protocol", "ipc/trace", "ipc", "ipc/blueprint", "ipc/a2a", "team", "team/supervisor", "team/view", "team/serve", "team/mcpserve", "claudeteam", "replay", "tui", "ipc/trace/otelexport", "store", "store/filestore", "store/natsstore", "store/natsurl"},
	".":                 {"internal/cli"},
	"cmd/huddle-full":   {"internal/cli/full"},
	// huddle broker's binary: the only one that links the NATS server.
	"cmd/huddle-broker": {"internal/cli", "store/natsserver"},

	// The team's state behind one interface, files or NATS JetStream
	// (docs/ARCHITECTURE.md, "The team directory and the store").
	"store":           {"protocol", "ipc/trace"},
	"store/filestore": {"protocol", "teamdir", "inbox", "ipc/trace", "store", "internal/dirwatch"},
	"store/natsstore": {"protocol", "teamdir", "inbox", "ipc/trace", "store", "store/natsurl"},
	// The store URL and the secrets it holds, without the NATS client.
	"store/natsurl": {"store"},
	// An embedded NATS server with JetStream (huddle-broker, the tests).
	"store/natsserver": {},
	"store/storetest":  {"protocol", "teamdir", "inbox", "ipc/trace", "store"},
	// A fresh store of each kind, for the tests that run on both.
	"store/storekinds": {"store", "store/filestore", "store/natsstore", "store/natsserver"},
	// A command of the Makefile's: it reads go test's benchmark output.
	"internal/benchtable": {},
	"internal/benchfloor": {},
	// One fsnotify watch per directory, shared by the followers of its
	// files (team's log followers, the files store's subscriptions).
	"internal/dirwatch": {},
	// Claude Code's permission rule language: which uses of a tool a
	// member's rules allow, ask about or deny.
	"permit": {},
	// The known word a mistyped one was meant to be ("did you mean").
	"internal/suggest": {},
	// A coding teammate's git worktree and branch, git driven as a
	// process: worktrees, diffs, merges, conflicts, sizes.
	"worktree": {},
	// The lexers and the style the diff view colours code with, built on
	// first use.
	"internal/highlight": {},
	// Processes found by a variable of their environment (/proc).
	"internal/procenv": {},
	// A command confined to one directory: an llm teammate's bash.
	"internal/sandbox": {},
	// The secrets huddle knows, taken out of what it writes and sends.
	"internal/redact": {},
	// Certificates for tests of TLS connections.
	"internal/testtls": {},
	// Loopback fakes of the Anthropic Messages and OpenAI Responses APIs
	// (only tests and the fixture recorder import them).
	"internal/fakeapi": {},
	// The pinned real Claude Code and Codex CLIs, installed, isolated and
	// driven through their scenarios (only tests and the recorder).
	"internal/realcli":        {"internal/fakeapi", "internal/procenv"},
	"internal/realcli/record": {"internal/realcli"},
	// The pinned JavaScript A2A SDK and TypeScript MCP SDK, installed and
	// run as helper processes (only tests import it).
	"internal/nodekit": {},
	// What the tests of several packages need alike (only tests import it).
	"internal/testkit": {},
	// The lead's operations on a team directory, for the tests that act as
	// a lead from outside the team (only tests import it).
	"internal/testkit/dirlead": {"protocol", "team", "store/filestore"},
	// A team directory's records, for the tests that read and write them
	// from outside the team (only tests import it).
	"internal/testkit/dirrecords": {"protocol", "store", "store/filestore", "team"},
	"internal/testkit/files":      {"inbox", "store/filestore"},
	"internal/testkit/claudefix":  {"claudeteam"},
	"internal/testkit/natsteam":   {"protocol", "store", "store/natsserver", "store/natsstore", "team"},
	// A team kept in a store of each kind, and the records and roles the
	// tests of team and its subpackages share (only tests import it).
	"internal/testkit/teamkit": {"protocol", "ipc/trace", "store", "store/storekinds", "team", "internal/testkit/dirrecords", "internal/testkit/files"},

	// The OpenTelemetry export of the spans ipc/trace records; only
	// internal/cli starts it.
	"ipc/trace/otelexport": {"protocol", "ipc/trace"},
}

// TestDependenciesPointOneWay reads the imports of every non-test Go file
// and fails on an import the package map does not allow.
func TestDependenciesPointOneWay(t *testing.T) {
	const module = "huddle"
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		allowed, ok := allowedImports[pkg]
		if !ok {
			t.Errorf("%s: package %s is not on the package map (docs/ARCHITECTURE.md, Packages; allowedImports)", path, pkg)
			return nil
		}
		seen[pkg] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			ours, found := strings.CutPrefix(imp, module+"/")
			if !found && imp != module {
				continue // the standard library or a third party
			}
			if !slices.Contains(allowed, ours) {
				t.Errorf("%s imports %s: %s may import only %v (docs/ARCHITECTURE.md, Packages)", path, imp, pkg, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowedImports {
		if !seen[pkg] {
			t.Errorf("package %s is on the map but has no Go files", pkg)
		}
	}
}

// heavyDeps are the third-party packages whose initialisers or size the
// packages of a light command (status, approve, send, requests, show,
// attach) must not link: the model SDKs, the NATS server, the
// OpenTelemetry SDK and exporter with gRPC and protobuf. Only the
// packages that use them import them (llm, store/natsserver,
// ipc/trace/otelexport, internal/cli).
var heavyDeps = []string{
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
	"github.com/nats-io/nats-server",
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// initHeavy are packages no package of huddle's links at all: their
// initialisers parse hundreds of embedded files, about 10 ms before
// main in every command of the one binary (internal/highlight instead).
var initHeavy = []string{
	"github.com/alecthomas/chroma/v2/lexers",
	"github.com/alecthomas/chroma/v2/styles",
}

// fullOnly are what huddle hands to huddle-full (cli.Full): the runtime,
// the screen, the doors and the trace export (the model SDKs are in
// heavyDeps). The huddle
// binary links none of them.
var fullOnly = []string{
	"huddle/team/supervisor",
	"huddle/tui",
	"huddle/ipc/a2a",
	"huddle/ipc/trace/otelexport",
	"charm.land/bubbletea",
	"charm.land/lipgloss",
	"charm.land/wish",
	"github.com/a2aproject/a2a-go",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/nats-io",
}

// TestLightCommandsLinkNoHeavyDeps lists the package graph (go list
// -deps) of the packages a light command runs on, and of the binary, and
// fails on a heavy dependency among them (docs/PERFORMANCE.md, "Start").
func TestLightCommandsLinkNoHeavyDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	has := func(list []string, prefixes []string) []string {
		var found []string
		for _, p := range list {
			for _, h := range prefixes {
				if p == h || strings.HasPrefix(p, h+"/") || strings.HasPrefix(p, h+".") {
					found = append(found, p)
				}
			}
		}
		return found
	}
	for _, pkg := range []string{"protocol", "teamdir", "inbox", "store", "store/filestore", "team", "team/view", "replay", "notify", "tui"} {
		if bad := has(deps("huddle/"+pkg), heavyDeps); len(bad) > 0 {
			t.Errorf("%s links %v: a light command would initialise them", pkg, bad)
		}
	}
	if bad := has(deps("huddle/cmd/huddle-full"), initHeavy); len(bad) > 0 {
		t.Errorf("huddle-full links %v, whose initialisers every command it runs pays", bad)
	}
	if bad := has(deps("huddle"), slices.Concat(heavyDeps, fullOnly)); len(bad) > 0 {
		t.Errorf("huddle links %v: they are huddle-full's", bad)
	}
	// nats-server's pse reads /proc/self/stat once a second from its
	// initialiser, in every process that links it: huddle-broker alone.
	if bad := has(deps("huddle"), []string{"github.com/nats-io/nats-server"}); len(bad) > 0 {
		t.Errorf("huddle links %v: every huddle process would wake once a second", bad)
	}
}
