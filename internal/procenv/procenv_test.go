package procenv

import (
	"crypto/rand"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestWithFindsAChildByItsEnvironment: a child started with a variable is
// found by it, and no longer once it has exited and been waited for.
func TestWithFindsAChildByItsEnvironment(t *testing.T) {
	kv := "PROCENV_TEST_MARK=" + rand.Text() // this run's alone: another test process runs the same test
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), kv)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if got := With(kv); !slices.Equal(got, []int{cmd.Process.Pid}) {
		t.Errorf("With(%q) = %v, want [%d]", kv, got, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := With(kv); len(got) != 0 {
		t.Errorf("after the child was reaped: %v", got)
	}
	if got := With("PROCENV_TEST_MARK="); len(got) != 0 {
		t.Errorf("a prefix of the variable matched %v", got)
	}
}
