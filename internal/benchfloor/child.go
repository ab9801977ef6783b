package benchfloor

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
)

// Child is the test binary started again as a helper process of a
// benchmark (a writer in another process, a server, a floor): its TestMain
// sees the role in its environment and plays it until its standard input
// ends.
type Child struct {
	Cmd *exec.Cmd
	// In is the child's standard input; Out its standard output.
	In  io.WriteCloser
	Out *bufio.Reader
}

// StartChild starts the test binary again with env added to this
// process's environment and no test to run. The benchmark's cleanup
// closes its input and waits for it; an exit other than 0 fails the
// benchmark.
func StartChild(tb testing.TB, env ...string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start the helper process: %v", err)
	}
	tb.Cleanup(func() {
		_ = in.Close() // the child ends at the end of its input
		if err := cmd.Wait(); err != nil {
			tb.Errorf("the helper process %v: %v", env, err)
		}
	})
	return &Child{Cmd: cmd, In: in, Out: bufio.NewReader(out)}
}
