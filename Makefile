# The commands CONTRIBUTING.md and the README name, in one place. Every tool
# comes through go.mod or a pinned `go run …@version`: nothing to install.

GOLANGCI := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
PKG ?= ./...
RUN ?= .
COUNT ?= 20

.PHONY: all test race stress lint golden bench ci

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

# Every benchmark once, with the iteration counts the docs quote.
bench:
	go test -run '^$$' -bench . -benchtime 20000x ./inbox
	go test -run '^$$' -bench Cycle -benchtime 20000x ./ipc/blueprint
	go test -run '^$$' -bench 'TeammateCall' -benchtime 2000x ./team
	go test -run '^$$' -bench 'PlanApprovalRoundTrip' -benchtime 300x ./team
	go test -run '^$$' -bench 'ThousandTeammates' -benchtime 1x ./team
	go test -run '^$$' -bench 'ObserverFold' -benchtime 2s ./team
	go test -run '^$$' -bench 'ExecCall' -benchtime 200x ./ipc
	go test -run '^$$' -bench 'TracesFold' ./ipc/trace
	go test -run '^$$' -bench 'View' -benchtime 200x ./tui
	go test -run '^$$' -bench 'KeystrokeUnderLoad' -benchtime 1000x ./tui
	go test -run '^$$' -bench 'TurnOverhead|Loopback' -benchtime 2s -benchmem ./llm
	go test -run '^$$' -bench 'IdleAgents' -benchtime 5x ./llm
	go test -run '^$$' -bench . ./replay

ci:
	bash .ci/run
