// Package full is huddle-full: the runs of the commands that link the
// runtime, the screen, the model SDKs or a server (cli.Full), which huddle
// itself leaves out so that it starts like a small tool
// (docs/ARCHITECTURE.md, "Two binaries"). Their flags and help are
// internal/cli's, like every other command's.
package full

import (
	"context"
	"io"
	"os"

	"huddle/internal/cli"
	"huddle/store"
	"huddle/store/natsstore"
)

// Main is huddle-full's main: every command of huddle, run in this
// process. It returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.MainFull(runs{}, args, stdout, stderr)
}

// runs is cli.Full in this process.
type runs struct{}

func (runs) Up(cl *cli.Cmdline, o *cli.UpFlags) int {
	return runUp(cl, o.Headless, o.AutoApprove, o.Members, o.Notify)
}
func (runs) Attach(cl *cli.Cmdline, o *cli.NotifyFlags) int { return runAttach(cl, o) }
func (runs) Call(cl *cli.Cmdline, o *cli.CallFlags) int     { return runCall(cl, o) }
func (runs) Serve(cl *cli.Cmdline, o *cli.ServeFlags) int   { return runServe(cl, o) }
func (runs) MCP(cl *cli.Cmdline, o *cli.MCPFlags) int       { return runMCP(cl, o) }
func (runs) Replay(cl *cli.Cmdline, speed float64) int      { return runReplay(cl, speed) }
func (runs) ExportTraces(stderr io.Writer) (stop func())    { return startTraceExport(stderr) }
func (runs) SSH(cl *cli.Cmdline, o *cli.SSHFlags) int {
	return runSSH(cl, o.Addr, o.AuthorizedKeys, o.ReadOnlyKeys, o.HostKey)
}
func (runs) Claude(cl *cli.Cmdline, o *cli.ClaudeFlags) int {
	return runClaude(cl, claudeOpts{ClaudeFlags: *o})
}
func (runs) OpenStore(ctx context.Context, url, creds string) (store.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, cli.OpenTimeout)
	defer cancel()
	return natsstore.Open(ctx, url, natsstore.Options{CredsFile: creds, CAFile: os.Getenv(cli.EnvNATSCA)})
}
func (runs) NoCommand(keep bool, stdin io.Reader, stdout, stderr io.Writer) int {
	return withoutCommand(keep, stdin, stdout, stderr)
}
