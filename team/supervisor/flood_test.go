package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

func init() { testRoles["flooder"] = runFlooder }

// floodCalls is how many invoke lines the flooder writes at once.
const floodCalls = 2000

// runFlooder writes floodCalls invoke lines to the member "sink", as fast
// as its stdout takes them, then counts the answers on its stdin and tells
// the lead, once every call past the bound was answered busy, "busy <n>".
func runFlooder() int {
	enc := json.NewEncoder(os.Stdout)
	written := make(chan struct{})
	go func() {
		defer close(written)
		for i := range floodCalls {
			enc.Encode(protocol.ExecLine{Kind: "invoke", Target: "sink", Name: "work", Prompt: fmt.Sprint(i), TimeoutSec: 3600})
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	busy := 0
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil || m.Type != protocol.TypeInvocationResult || m.Result == nil || m.Result.Error == nil {
			continue
		}
		if m.Result.Error.Code == protocol.ErrIPC && strings.HasPrefix(m.Result.Error.Message, "busy: ") {
			busy++
		}
		if busy == floodCalls-callsPerCaller {
			<-written // the encoder is the writer's until then
			enc.Encode(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: fmt.Sprintf("busy %d", busy)})
		}
	}
	return 0
}

// TestInvokeFloodIsBounded: an exec agent that writes 2,000 invoke lines
// at once to a teammate that never answers gets callsPerCaller calls under
// way and a busy IPC_ERROR for every other, at once; the runtime's
// goroutines stay bounded by the limit, not by the flood.
func TestInvokeFloodIsBounded(t *testing.T) {
	dir := t.TempDir()
	flooder := withPolicy(t, dir, roleSpec("flooder", "flooder"), `{"allowed_targets":["sink"]}`)
	tally := filepath.Join(t.TempDir(), "tally")
	sink := roleSpec("sink", "tally", "TALLY="+tally)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{sink, flooder}})
	before := runtime.NumGoroutine()
	startTeam(t, dir, Options{})
	got := leadMessages(t, dir)
	want := fmt.Sprintf("flooder:busy %d", floodCalls-callsPerCaller)
	testkit.WaitFor(t, time.Minute, "every call past the bound answered busy", func() bool { return strings.Contains(got(), want) })
	// What runs now: the team (two members, their pipes and consumers)
	// and the calls under way. A goroutine a call would be 2,000 more.
	n := runtime.NumGoroutine() - before
	t.Logf("%d goroutines more than before the team started, %d calls under way", n, callsPerCaller)
	if n > 600 {
		t.Errorf("%d goroutines more than before the team started, with %d calls under way: the flood is not bounded", n, callsPerCaller)
	}
	// The sink is handed the calls under way, and no more.
	handed := func() int {
		b, _ := os.ReadFile(tally)
		return strings.Count(string(b), string(protocol.TypeInvocationRequest))
	}
	testkit.WaitFor(t, 30*time.Second, "the sink handed the calls under way", func() bool { return handed() == callsPerCaller })
}

// TestCallBoundsPerCallerAndTeam: a caller past callsPerCaller and a team
// past callsPerTeam are told busy, naming which; a place given back is
// taken again.
func TestCallBoundsPerCallerAndTeam(t *testing.T) {
	rt := &Runtime{}
	var releases []func()
	for i := range callsPerTeam {
		release, busy := rt.reserveCall(fmt.Sprintf("m%d", i/callsPerCaller))
		if busy != "" {
			t.Fatalf("call %d refused under the bounds: %s", i, busy)
		}
		releases = append(releases, release)
	}
	if _, busy := rt.reserveCall("m0"); !strings.Contains(busy, "m0 has 64 calls under way") {
		t.Errorf("a caller at its bound: %q", busy)
	}
	if _, busy := rt.reserveCall("someone-else"); !strings.Contains(busy, "the team has 1024 calls under way") {
		t.Errorf("the team at its bound: %q", busy)
	}
	releases[0]()
	releases[0]() // twice is once
	if _, busy := rt.reserveCall("someone-else"); busy != "" {
		t.Errorf("a place given back is not taken again: %q", busy)
	}
	if _, busy := rt.reserveCall("someone-else"); busy == "" {
		t.Errorf("a place given back twice counted twice")
	}
}
