// Command record runs the real-CLI scenarios of internal/realcli against
// their loopback fakes and writes what each CLI printed (and was sent) as
// the fixtures under agents/testdata/real/{claude,codex}/:
//
//	go run ./internal/realcli/record [-out agents/testdata/real]
//
// `make record-agents` runs it. The CLIs are the pinned ones realcli
// installs; nothing reaches the network but the npm registry, once.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"huddle/internal/realcli"
)

func main() {
	out := flag.String("out", "agents/testdata/real", "the directory the fixtures go in")
	flag.Parse()
	if err := record(*out); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func record(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bins, err := realcli.Install(ctx)
	if err != nil {
		return err
	}
	scenarios := []func(context.Context, string) (*realcli.Transcript, error){
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			run, err := realcli.ClaudePlanScenario(ctx, bins, root)
			if run == nil {
				return nil, err
			}
			return &run.Transcript, err
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			run, err := realcli.ClaudeAPIErrorScenario(ctx, bins, root)
			if run == nil {
				return nil, err
			}
			return &run.Transcript, err
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			run, err := realcli.CodexApprovalsScenario(ctx, bins, root)
			if run == nil {
				return nil, err
			}
			return &run.Transcript, err
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			return realcli.ClaudePrintPlanScenario(ctx, bins, root)
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			return realcli.CodexExecReconnectScenario(ctx, bins, root)
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			return realcli.CodexExecNoGitScenario(ctx, bins, root)
		},
		func(ctx context.Context, root string) (*realcli.Transcript, error) {
			return realcli.CodexExecResumeScenario(ctx, bins, root)
		},
	}
	for _, scenario := range scenarios {
		if err := recordOne(ctx, out, scenario); err != nil {
			return err
		}
	}
	return nil
}

func recordOne(ctx context.Context, out string, scenario func(context.Context, string) (*realcli.Transcript, error)) error {
	root, err := os.MkdirTemp("", "huddle-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t, err := scenario(ctx, root)
	if err != nil {
		return err
	}
	if err := t.WriteFixture(out); err != nil {
		return err
	}
	fmt.Printf("%s/%s/%s.jsonl: %d lines (%d sent, %d model requests)\n", out, t.CLI, t.Name, len(t.Stdout), len(t.Stdin), len(t.Requests))
	return nil
}
