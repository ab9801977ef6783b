// Package natsteam gives a test a team kept in NATS: an embedded server,
// the store URL of a fresh team on it, and a store opened on that team as
// another process of the team would open it. Only tests import it.
package natsteam

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
	"huddle/team"
)

var teams atomic.Int64

// New starts an embedded server, stopped when the test ends, and returns
// the store URL of a fresh team on it (nothing in it yet). With a token,
// the server's clients must present it, and the URL carries it.
func New(t testing.TB, token string) string {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := srv.URL(fmt.Sprintf("crew%d", teams.Add(1)))
	if token != "" {
		url = strings.Replace(url, "nats://", "nats://"+token+"@", 1)
	}
	return url
}

// Open opens the team at url for the test, closed when it ends.
func Open(t testing.TB, url string) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := natsstore.Open(ctx, url, natsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Crew is the team the store tests share: two scripted members that wait,
// so that every message they get is only delivered.
var Crew = team.Team{Name: "crew", Members: []team.MemberSpec{
	{Name: "alice", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
	{Name: "bob", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
}}

// OpenCrew is Open, and when put it puts Crew's team.json there.
func OpenCrew(t testing.TB, url string, put bool) store.Store {
	t.Helper()
	st := Open(t, url)
	if put {
		b, _ := json.Marshal(Crew)
		PutConfigs(t, st, map[string]string{store.ConfigTeam: string(b)})
	}
	return st
}

// PutConfigs puts each configuration file (name → data) in st.
func PutConfigs(t testing.TB, st store.Store, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for name, data := range configs {
		if err := st.PutConfig(ctx, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
}

// Plan puts a pending plan of from's, "a plan of FROM", due in ten
// minutes, in st.
func Plan(t testing.TB, st store.Store, id, from string) {
	t.Helper()
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, time.Now(), 10*time.Minute)
	r.Plan = "a plan of " + from
	if err := st.CreateRequest(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
}
