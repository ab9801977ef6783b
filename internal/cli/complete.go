package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"huddle/claudeteam"
	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
)

// completeCommand is the hidden command the completion scripts run for a
// command's arguments: `huddle __complete KIND [DIR|ROOT]` prints one word
// a line, nothing at all when there is nothing to offer, and never an
// error (a completion must not write on the terminal).
const completeCommand = "__complete"

// Words a completion offers (argWords).
const (
	wordsMembers     = "members"      // the team's members
	wordsPending     = "pending"      // pending request ids
	wordsRequests    = "requests"     // every live request id
	wordsClaude      = "claude"       // huddle claude's subcommands
	wordsClaudeTeams = "claude-teams" // the Claude Code teams under the root
)

// argWords is what a command's first argument is, read from its
// synopsis: MEMBER, ID, or huddle claude's subcommand.
func argWords(c command) string {
	first, _, _ := strings.Cut(c.synopsis, " ")
	switch {
	case c.name == "claude":
		return wordsClaude
	case first == "MEMBER":
		return wordsMembers
	case (first == "ID" || first == "ID...") && (c.name == "approve" || c.name == "reject"):
		return wordsPending
	case first == "ID" || first == "ID...":
		return wordsRequests
	}
	return ""
}

// runComplete prints the words of kind for the team directory or Claude
// Code root where (default: as the commands take it).
func runComplete(args []string, stdout io.Writer) int {
	if len(args) == 0 {
		return ExitOK
	}
	where := ""
	if len(args) > 1 {
		where = args[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, w := range completeWords(ctx, args[0], where) {
		fmt.Fprintln(stdout, team.Printable(w))
	}
	return ExitOK
}

func completeWords(ctx context.Context, kind, where string) []string {
	switch kind {
	case wordsClaude:
		return []string{"teams", "status", "requests", "attach", "watch"}
	case wordsClaudeTeams:
		root := where
		if root == "" {
			var err error
			if root, err = claudeteam.DefaultRoot(); err != nil {
				return nil
			}
		}
		names, _ := claudeteam.Teams(root)
		if j, err := claudeteam.DefaultJournal(root); err == nil {
			kept, _ := j.Teams()
			names = append(names, kept...)
		}
		slices.Sort(names)
		return slices.Compact(names)
	}
	dir := where
	if dir == "" {
		dir = DefaultTeamDir()
	}
	if _, err := os.Stat(team.ConfigPath(dir)); err != nil {
		return nil // no team here: nothing to offer, nothing made
	}
	switch kind {
	case wordsMembers:
		t, err := team.Load(dir)
		if err != nil {
			return nil
		}
		var out []string
		for _, m := range t.Members {
			out = append(out, m.Name)
		}
		return out
	case wordsPending, wordsRequests:
		st, err := filestore.Open(dir)
		if err != nil {
			return nil
		}
		defer st.Close()
		rs, _, err := st.LiveRequests(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for _, r := range rs {
			if kind == wordsRequests || r.Status == protocol.RequestPending {
				out = append(out, r.ID)
			}
		}
		return out
	}
	return nil
}
