package cli

// The lead's commands on a team kept in a store (docs/ARCHITECTURE.md, "The team directory and the store"): the
// same checks and the same output as on a team directory, through the
// team's *On functions.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"huddle/ipc/trace"
	"huddle/store"
	"huddle/team"
)

// notRunning is the "team not running" line of the team st keeps, or ""
// while a runtime of it runs.
func notRunning(ctx context.Context, st store.Store) string {
	if rt := team.RuntimeOf(ctx, st); team.Down(rt) {
		return team.NotRunning(rt)
	}
	return ""
}

// chainsOn folds the store's spans into chains, newest first.
func chainsOn(ctx context.Context, st store.Store) ([]trace.Chain, int64, error) {
	sr, ok := st.(store.SpanReader)
	if !ok {
		return nil, 0, errors.New("traces: this store cannot read its spans")
	}
	spans, skipped, err := sr.Spans(ctx)
	if err != nil {
		return nil, 0, err
	}
	folded := trace.NewTraces()
	for _, s := range spans {
		folded.Add(s)
	}
	return folded.Chains(), skipped, nil
}

// initOnStore is huddle init --store: it puts team.json and the IPC
// policies in the store, from --dir when it holds a team, else from the
// chosen template. A file the store holds already is left as it is and
// said so, so a second run changes nothing.
func initOnStore(cl *cmdline, template string) int {
	src := cl.dir
	if _, err := os.Stat(team.ConfigPath(cl.dir)); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return cl.fail(err)
		}
		tmp, err := os.MkdirTemp("", "huddle-init-")
		if err != nil {
			return cl.fail(err)
		}
		defer os.RemoveAll(tmp)
		if err := writeTemplate(tmp, template); err != nil {
			return cl.fail(err)
		}
		src = tmp
	} else if cl.flagGiven("template") {
		return cl.usageError("--template and the team.json in %s: one or the other", cl.dir)
	}
	files, err := configFiles(src)
	if err != nil {
		return cl.fail(err)
	}
	ctx, stop := signalContext()
	defer stop()
	st, err := openStore(ctx, cl)
	if err != nil {
		return cl.fail(err)
	}
	defer st.Close()
	from := "the " + template + " template"
	if src == cl.dir {
		from = cl.dir
	}
	for _, f := range files {
		switch err := st.PutConfig(ctx, f.name, f.data); {
		case errors.Is(err, store.ErrExists):
			fmt.Fprintf(cl.stdout, "%s is in the store already: left as it is\n", f.name)
		case err != nil:
			return cl.fail(fmt.Errorf("put %s: %w", f.name, err))
		default:
			fmt.Fprintf(cl.stdout, "put %s from %s\n", f.name, from)
		}
	}
	fmt.Fprintf(cl.stdout, "team in %s; next: huddle up --store URL\n", cl.storeName())
	return exitOK
}

// writeTemplate writes the template's team directory into dir.
func writeTemplate(dir, template string) error {
	if template == "llm" {
		return team.InitLLM(dir, team.LLMTemplateFromEnv(os.Getenv))
	}
	return team.Init(dir)
}

// configFile is one configuration file init puts in a store.
type configFile struct {
	name string // store.ValidateConfigName's
	data []byte
}

// configFiles are the configuration files of the team in dir that a store
// keeps: team.json (validated), the team's .puruto-ipc.json, and each
// member's policy as ipc/<member>.puruto-ipc.json, those that exist.
func configFiles(dir string) ([]configFile, error) {
	b, err := os.ReadFile(team.ConfigPath(dir))
	if err != nil {
		return nil, fmt.Errorf("team: %w", err)
	}
	t, err := team.Parse(b)
	if err != nil {
		return nil, err
	}
	files := []configFile{{store.ConfigTeam, b}}
	add := func(name, path string) error {
		if err := store.ValidateConfigName(name); err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files = append(files, configFile{name, data})
		return nil
	}
	if err := add(store.ConfigPolicy, filepath.Join(dir, store.ConfigPolicy)); err != nil {
		return nil, err
	}
	for _, m := range t.Members {
		if p := m.PolicyPath(dir); p != "" {
			if err := add(store.MemberPolicyConfig(m.Name), p); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}
