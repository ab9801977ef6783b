// Package sandbox runs a command confined to one directory: it may write
// only there (and in a temporary directory of its own), read there and in
// the system's read-only paths, see no other process's /proc, and leaves
// no process behind. An llm teammate's bash runs in it.
//
// Landlock restricts the thread that asks and what it starts, so huddle
// confines a command in a child, never in itself: Run re-executes huddle's
// own binary (/proc/self/exe) as a helper named "huddle-sandbox", which
// this package's init takes over in any binary that links it (huddle, and
// every test binary of a package that uses it). The helper runs in two
// stages:
//
//   - outer: PID 1 of new PID and mount namespaces where the kernel allows
//     them, with a fresh /proc that shows only the sandbox's processes;
//     elsewhere a child subreaper. It starts inner, waits for it, then kills
//     every process left (a `nohup … &` included) before it exits.
//   - inner: drops the capabilities root would keep, applies Landlock to
//     itself (go-landlock) and execs the command.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Kernel is what the kernel offers a sandbox.
type Kernel struct {
	// Landlock is the Landlock ABI version; 0: none, and Run refuses.
	Landlock int
	// Namespaces says new PID and mount namespaces may be tried (a user
	// namespace too, for a user other than root); when the kernel refuses
	// them, Run goes on without, /proc then closed to the command.
	Namespaces bool
}

// Probe is what this kernel offers, asked once.
var Probe = sync.OnceValue(func() Kernel {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		v = 0
	}
	return Kernel{Landlock: v, Namespaces: true}
})

// ErrNoLandlock is Run's refusal where the kernel offers no Landlock.
var ErrNoLandlock = errors.New("this kernel offers no Landlock (Linux 5.13 or later, with landlock among the LSMs it booted with)")

// SystemPaths are what a confined command may read and execute besides its
// directory: the system's programs, libraries and configuration (/etc:
// resolv.conf, passwd, certificates, the alternatives links). A home
// directory, /tmp, /root, /var and /run are not among them.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store"}

// Options are what Run confines a command to.
type Options struct {
	Dir    string    // its working directory, the one it may write
	Env    []string  // its whole environment (TMPDIR is set by Run)
	Stdout io.Writer // where its output goes (stdout and stderr alike)
	Kernel Kernel
}

// noNamespaces is set once the kernel refused the namespaces: later runs
// do not try again.
var noNamespaces atomic.Bool

// helperName is the helper's argv[0], what init recognises.
const helperName = "huddle-sandbox"

// Run runs argv in Dir, confined, until it ends or ctx does: then the
// helper is asked to end (SIGTERM), which kills what the command started,
// and killed a second later if it has not. The error is exec.Cmd.Wait's (an
// *exec.ExitError for an exit status), or ErrNoLandlock.
func Run(ctx context.Context, o Options, argv ...string) error {
	if o.Kernel.Landlock < 1 {
		return ErrNoLandlock
	}
	tmp, err := os.MkdirTemp("", "huddle-tool-")
	if err != nil {
		return fmt.Errorf("sandbox: temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	ns := o.Kernel.Namespaces && !noNamespaces.Load()
	for {
		cmd := helper(ctx, o, tmp, ns, argv)
		err := cmd.Start()
		if err != nil && ns && refused(err) {
			noNamespaces.Store(true)
			ns = false
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		return cmd.Wait()
	}
}

// refused reports a start the kernel refused for its namespaces.
func refused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.ENOSYS, syscall.EACCES} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// helper is the command of the outer stage, in new namespaces when ns.
func helper(ctx context.Context, o Options, tmp string, ns bool, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = append([]string{helperName, stageOuter, o.Dir, tmp, "--"}, argv...)
	cmd.Dir = o.Dir
	cmd.Env = append(append([]string(nil), o.Env...), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stdout
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ns {
		attr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
			// A user namespace lets a user make the others; the helper
			// keeps CAP_SYS_ADMIN in it, to mount its /proc.
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.AmbientCaps = []uintptr{capSysAdmin}
		}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Second
	return cmd
}

// capSysAdmin is CAP_SYS_ADMIN.
const capSysAdmin = 21
