package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The helper's stages: argv is
// huddle-sandbox outer DIR TMP -- COMMAND...
// huddle-sandbox inner DIR TMP PROC -- COMMAND...
const (
	stageOuter = "outer"
	stageInner = "inner"
)

// init takes over a process started as the helper: it never returns to the
// program that links this package.
func init() {
	if filepath.Base(os.Args[0]) != helperName {
		return
	}
	os.Exit(helperMain(os.Args[1:]))
}

// exitCannot is the helper's status when it could not run the command.
const exitCannot = 126

func helperMain(args []string) int {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep == len(args)-1 {
		return cannot(errors.New("no command"))
	}
	head, argv := args[:sep], args[sep+1:]
	switch {
	case len(head) == 3 && head[0] == stageOuter:
		return outer(head[1], head[2], argv)
	case len(head) == 4 && head[0] == stageInner:
		return cannot(inner(head[1], head[2], head[3] == "1", argv))
	}
	return cannot(fmt.Errorf("bad arguments %q", head))
}

// cannot says in one line why the command did not run.
func cannot(err error) int {
	fmt.Fprintf(os.Stderr, "huddle sandbox: %v\n", err)
	return exitCannot
}

// outer sets up the namespaces it was started in (a private mount
// namespace, a fresh /proc), starts inner and waits for it, then kills
// every process left, and exits with inner's status. Asked to end
// (SIGTERM, SIGINT, SIGHUP), it kills them all at once.
func outer(dir, tmp string, argv []string) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid1 := os.Getpid() == 1
	proc := false
	if pid1 {
		// Mounts made here stay here; the fresh /proc shows this PID
		// namespace only.
		proc = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") == nil &&
			unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") == nil
	} else if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return cannot(fmt.Errorf("subreaper: %w", err))
	}
	flag := "0"
	if proc {
		flag = "1"
	}
	p, err := os.StartProcess("/proc/self/exe", append([]string{helperName, stageInner, dir, tmp, flag, "--"}, argv...), &os.ProcAttr{
		Dir: dir, Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return cannot(err)
	}
	exited := make(chan int, 1)
	go func() { exited <- reapUntil(p.Pid) }()
	code := 128 + int(syscall.SIGTERM)
	select {
	case code = <-exited:
	case <-stop:
	}
	killAll(pid1)
	return code
}

// reapUntil reaps children (orphans are handed to outer) until pid ends,
// and returns its status as a shell says it.
func reapUntil(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return exitCannot
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// killAll kills every process the command left, and reaps them. As PID 1
// of its namespace, kill(-1) reaches them all; as a subreaper, every orphan
// is outer's child, found in /proc and killed until none is left.
func killAll(pid1 bool) {
	for {
		if pid1 {
			_ = syscall.Kill(-1, syscall.SIGKILL)
		} else {
			for _, pid := range children(os.Getpid()) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.ECHILD) {
			return
		}
		if err == nil {
			continue
		}
		time.Sleep(time.Millisecond)
	}
}

// children are the processes whose parent is pid, read from /proc.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// inner confines itself and execs argv: it drops every capability it
// may, then applies Landlock (dir and tmp read and written, the system
// paths and a few devices read, /proc read only when it is outer's fresh
// one; signals and abstract sockets scoped to the sandbox), on this one
// thread, which then execs. It returns only when it failed.
func inner(dir, tmp string, proc bool, argv []string) error {
	bin, err := lookPath(argv[0])
	if err != nil {
		return err
	}
	ro := append([]string{}, SystemPaths...)
	if proc {
		ro = append(ro, "/proc")
	}
	rules := []landlock.Rule{
		landlock.RWDirs(dir, tmp).WithRefer(),
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.ROFiles("/dev/zero", "/dev/random", "/dev/urandom").IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/full").IgnoreIfMissing(),
		landlock.ROFiles(bin),
	}
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return ErrNoLandlock
	}
	defer unix.Close(fd)
	runtime.LockOSThread() // never unlocked: this thread execs
	if err := dropCaps(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return syscall.Exec(bin, argv, os.Environ())
}

// lookPath finds name in $PATH as the command will see it.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}

// dropCaps leaves the command no capability: none ambient or
// inheritable, and for root (whose exec would get back every capability of
// its bounding set) an empty bounding set.
func dropCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if os.Geteuid() == 0 {
		for c := 0; ; c++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			if err != nil {
				return fmt.Errorf("capabilities: %w", err)
			}
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	return nil
}
