# The commands CONTRIBUTING.md and the README name, in one place. Every tool
# comes through go.mod or a pinned `go run …@version`: nothing to install.

GOLANGCI := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
PKG ?= ./...
RUN ?= .
COUNT ?= 20

.PHONY: all test race stress lint golden bench bench-quick screenshot real-agents record-agents doors ci

all: lint race

# The README's test command.
test:
	go test $(PKG)

race:
	go test -race -count=1 $(PKG)

# Two race runs at once, COUNT times each, so the scheduler is busy:
#   make stress PKG=./inbox RUN=TestCompact
stress:
	@echo "stress: go test -race -count=$(COUNT) -run '$(RUN)' $(PKG), twice at once"
	@logs=$$(mktemp -d); \
	 go test -race -timeout 60m -count=$(COUNT) -run '$(RUN)' $(PKG) > $$logs/1.log 2>&1 & p1=$$!; \
	 go test -race -timeout 60m -count=$(COUNT) -run '$(RUN)' $(PKG) > $$logs/2.log 2>&1; s2=$$?; \
	 wait $$p1; s1=$$?; \
	 tail -n 20 $$logs/1.log $$logs/2.log; echo "stress: logs in $$logs"; \
	 test $$s1 -eq 0 -a $$s2 -eq 0

lint:
	gofmt -l . | (! grep .) || (echo "gofmt would change the files above"; exit 1)
	go vet ./...
	$(GOLANGCI) run ./...

# Rewrites the golden screens; read `git diff tui/testdata` before committing.
golden:
	go test ./tui -run TestGoldenScreens -update

# Every benchmark, -count $(BENCHCOUNT) times with the iteration counts the
# docs quote, into one table (docs/PERFORMANCE.md): each package's raw output
# is appended to $(BENCHOUT) as it runs, then internal/benchtable prints the
# min/median/max of every metric and fails the target if any run failed.
# One line per package: $(call bench_pkg,PACKAGE,REGEXP,BENCHTIME[,FLAGS]).
BENCHOUT ?= bench.out
BENCHCOUNT ?= 3
bench_pkg = go test -run '^$$' -bench '$(2)' -benchtime $(3) -count $(BENCHCOUNT) $(4) $(1) 2>&1 | tee -a $(BENCHOUT)

bench:
	@rm -f $(BENCHOUT)
	$(call bench_pkg,./inbox,Append|Delivery,20000x)
	$(call bench_pkg,./inbox,ConsumerHeap,1x)
	$(call bench_pkg,./inbox,BusCompare,4000x)
	$(call bench_pkg,./ipc/blueprint,Cycle,20000x)
	$(call bench_pkg,./team/supervisor,TeammateCall,2000x)
	$(call bench_pkg,./team/supervisor,PlanApprovalRoundTrip,300x)
	$(call bench_pkg,./team/supervisor,ThousandTeammates,1x)
	$(call bench_pkg,./team/supervisor,IdleRuntime,1x)
	$(call bench_pkg,./team/supervisor,StartOverHistory,1x)
	$(call bench_pkg,./team/view,ObserverFold\b,2s)
	$(call bench_pkg,./team/view,ObserverFoldPerChange,2000x)
	$(call bench_pkg,./ipc,ExecCall,200x)
	$(call bench_pkg,./ipc/trace,TracesFold,1s)
	$(call bench_pkg,./ipc/trace,SpanRecording,20000x)
	$(call bench_pkg,./store/storetest,Delivery|Append|Decide,2000x)
	$(call bench_pkg,./store/storetest,PlanApprovalRoundTrip|CallRoundTrip,300x)
	$(call bench_pkg,./tui,View,200x)
	$(call bench_pkg,./tui,KeystrokeUnderLoad,1000x)
	$(call bench_pkg,./tui,MemberGather,2000x)
	$(call bench_pkg,./tui,DiffView,50x)
	$(call bench_pkg,./team,Worktrees50,30x)
	$(call bench_pkg,./internal/cli,AttachIdle,3x)
	$(call bench_pkg,./internal/cli,Start$$,40x)
	$(call bench_pkg,./internal/cli,AttachFirstFrame,10x)
	$(call bench_pkg,./internal/cli,AttachUnderLoad,2x)
	$(call bench_pkg,./llm,TurnOverhead|Loopback,2s,-benchmem)
	$(call bench_pkg,./llm,IdleAgents,5x)
	$(call bench_pkg,./replay,.,1s)
	@echo
	go run ./internal/benchtable $(BENCHOUT)

# The same list run once: a smoke run in about a third of the time.
bench-quick:
	$(MAKE) bench BENCHCOUNT=1

# The README's picture, docs/screen.png, from the demo run in tmux and
# rendered by a pinned freeze (docs/screenshot.sh says what it needs).
# By hand only: no test or CI runs it.
screenshot:
	bash docs/screenshot.sh

# The tests that run the real Claude Code and Codex (installed from npm
# into the user's cache on first use) against loopback fakes; go test
# ./... runs them too.
real-agents:
	go test -race -count=1 ./internal/realcli/... ./agents

# The doors (A2A, MCP) against implementations huddle did not write: the
# A2A project's JavaScript SDK and Go SDK, MCP's TypeScript SDK (pinned in
# internal/nodekit/npm, installed by npm into the user's cache on first
# use) and the real Claude Code (internal/realcli); go test ./... runs
# them too (docs/doors.md).
doors:
	go test -race -count=1 ./ipc/a2a ./team/mcpserve
	go test -race -count=1 -run 'A2A|MCP|GenAI|ClaudeCodeDelegates|OneTrace' ./ipc/trace/otelexport ./team/serve ./team/supervisor ./internal/cli

# The fixtures of agents/testdata/real: the pinned real Claude Code and
# Codex (installed from npm into the user's cache on first use) run their
# scenarios against loopback fakes. Read `git diff agents/testdata/real`
# before committing.
record-agents:
	go run ./internal/realcli/record -out agents/testdata/real

ci:
	bash .ci/run
