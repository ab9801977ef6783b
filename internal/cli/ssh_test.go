package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store/filestore"
)

// sshKeyPair makes an ed25519 key with ssh-keygen, commented comment.
func sshKeyPair(t *testing.T, dir, name, comment string) (private, public string) {
	t.Helper()
	private = filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", private).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	b, err := os.ReadFile(private + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return private, string(b)
}

// sshArgs are the real OpenSSH client's arguments for key at port: no
// configuration, agent or known hosts of the machine's.
func sshArgs(key, port string, more ...string) []string {
	return append([]string{"-F", "/dev/null", "-i", key, "-p", port, "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes"}, append(more, "127.0.0.1")...)
}

// TestSSHServesTheScreen: the real ssh client on loopback gets the team's
// screen; a key of --authorized-keys approves a plan, recorded as
// lead:NAME; a key of --read-only-keys sees the plan and cannot decide
// it; a key in neither file is refused.
func TestSSHServesTheScreen(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatal("the OpenSSH client is not installed (Debian's openssh-client)")
	}
	keys := t.TempDir()
	alice, alicePub := sshKeyPair(t, keys, "alice", "alice@laptop")
	bob, bobPub := sshKeyPair(t, keys, "bob", "bob@phone")
	eve, _ := sshKeyPair(t, keys, "eve", "eve@nowhere")
	if err := os.WriteFile(filepath.Join(keys, "authorized"), []byte("# who may decide\n"+alicePub), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keys, "watchers"), []byte(bobPub), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := demoTeam(t)
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	natsteam.Plan(t, st, "pl-aaaaaaaaaaaa", "reservas")

	srv := exec.Command(huddleBinary(t), "ssh", "--dir", dir, "--addr", "127.0.0.1:0", "--host-key", filepath.Join(keys, "host"),
		"--authorized-keys", filepath.Join(keys, "authorized"), "--read-only-keys", filepath.Join(keys, "watchers"))
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("huddle ssh said nothing: %v", err)
	}
	m := regexp.MustCompile(`on 127\.0\.0\.1:(\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("huddle ssh said %q", line)
	}
	port := m[1]
	env := realcli.Env{Work: keys, Vars: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + keys, "TERM=xterm-256color"}}

	// bob watches: he sees the plan, and a refuses.
	watcher, err := realcli.StartTerminal("ssh", sshArgs(bob, port, "-tt"), env, 120, 36)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	testkit.WaitFor(t, 20*time.Second, "bob's screen showing the plan", func() bool {
		s := watcher.Screen()
		return strings.Contains(s, "pl-aaaaaaaaaaaa") && strings.Contains(s, "over SSH") && strings.Contains(s, "bob")
	})
	if s := watcher.Screen(); strings.Contains(s, "a approve") {
		t.Fatalf("a watcher's footer offers a:\n%s", s)
	}
	if err := watcher.Type("a"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "bob told he may only watch", func() bool {
		return strings.Contains(watcher.Screen(), "may watch, not decide")
	})

	// alice decides.
	lead, err := realcli.StartTerminal("ssh", sshArgs(alice, port, "-tt"), env, 120, 36)
	if err != nil {
		t.Fatal(err)
	}
	defer lead.Stop()
	testkit.WaitFor(t, 20*time.Second, "alice's screen offering the approval", func() bool {
		return strings.Contains(lead.Screen(), "a approve reservas pl-aaaaaaaaaaaa")
	})
	if r, err := st.Request(t.Context(), "pl-aaaaaaaaaaaa"); err != nil || r.Status != protocol.RequestPending {
		t.Fatalf("the plan after bob's a: %+v %v", r, err)
	}
	if err := lead.Type("a"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the plan approved by lead:alice", func() bool {
		r, err := st.Request(t.Context(), "pl-aaaaaaaaaaaa")
		return err == nil && r.Status == protocol.RequestApproved && r.ResolvedBy == "lead:alice"
	})
	testkit.WaitFor(t, 10*time.Second, "bob's screen showing who approved it", func() bool {
		return strings.Contains(watcher.Screen(), "lead:alice")
	})
	if err := lead.Type("q"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lead.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("q did not end alice's session:\n%s", lead.Screen())
	}

	// eve is refused before any screen.
	cmd := exec.Command("ssh", sshArgs(eve, port, "-T")...)
	cmd.Env = env.Vars
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "Permission denied (publickey)") {
		t.Fatalf("a key in neither file: %v\n%s", err, b)
	}
}

// TestSSHRefusesBadKeys: no key file, or a line that is no key, is one
// usage line naming it, before anything listens.
func TestSSHRefusesBadKeys(t *testing.T) {
	dir := demoTeam(t)
	bad := filepath.Join(t.TempDir(), "authorized")
	if err := os.WriteFile(bad, []byte("# fine\n\nssh-ed25519 not-base64!! x@y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huddle(t, "ssh", "--dir", dir).wantError(t, ExitUsage, "--authorized-keys FILE is required", "ssh without keys")
	huddle(t, "ssh", "--dir", dir, "--authorized-keys", bad).wantError(t, ExitUsage, bad+":3: not a public key", "ssh with a bad key line")
	huddle(t, "ssh", "--dir", dir, "--authorized-keys", bad+".missing").wantError(t, ExitUsage, "no such file", "ssh with a missing file")
}
