package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
)

// rawClient speaks JSON-RPC to a door's stdio server line by line, as a
// client of any make would.
type rawClient struct {
	t   *testing.T
	in  io.WriteCloser
	mu  sync.Mutex
	got map[float64]map[string]any
	id  float64
	// init is the answer to initialize.
	init map[string]any
}

func rawConnect(t *testing.T, d *Door, caller string) *rawClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.ServeStdio(ctx, caller, inR, outW)
		outW.Close()
	}()
	c := &rawClient{t: t, in: inW, got: map[float64]map[string]any{}}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				if id, ok := m["id"].(float64); ok {
					c.mu.Lock()
					c.got[id] = m
					c.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	c.init = c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	c.notify("notifications/initialized")
	return c
}

func (c *rawClient) send(method, params string) float64 {
	c.mu.Lock()
	c.id++
	id := c.id
	c.mu.Unlock()
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":%q`, id, method)
	if params != "" {
		line += `,"params":` + params
	}
	if _, err := io.WriteString(c.in, line+"}\n"); err != nil {
		c.t.Fatal(err)
	}
	return id
}

func (c *rawClient) notify(method string) {
	if _, err := io.WriteString(c.in, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`+"\n", method)); err != nil {
		c.t.Fatal(err)
	}
}

// answer waits for the response to id.
func (c *rawClient) answer(id float64) map[string]any {
	c.t.Helper()
	var m map[string]any
	testkit.WaitFor(c.t, 20*time.Second, fmt.Sprintf("the answer to request %v", id), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		m = c.got[id]
		return m != nil
	})
	return m
}

func (c *rawClient) call(method, params string) map[string]any {
	c.t.Helper()
	return c.answer(c.send(method, params))
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// TestMCPTasksOnTheWire: the tasks of the 2025-11-25 specification on the
// wire, as a client of any make sends them: initialize declares them; a
// task-augmented call_action answers a CreateTaskResult at once; tasks/get
// says input_required while the plan waits; tasks/result blocks until the
// lead approves, then answers the tool's result related to the task.
// Bad input gets one error each and harms nothing: a task of a tool that
// runs none (-32601), bad arguments, tasks/get without a task id or of a
// task that is not there (-32602), tasks/list without params.
func TestMCPTasksOnTheWire(t *testing.T) {
	teamkit.OnEachStore(t, doorTeam(), func(t *testing.T, k *teamkit.Kept) {
		d := door(t, k)
		testkit.WaitFor(t, 20*time.Second, "the planner's plan to wait", func() bool { return k.PendingPlan("planner") != nil })
		c := rawConnect(t, d, "wire")

		b, _ := json.Marshal(c.init["result"])
		if !strings.Contains(string(b), `"tasks":{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}`) {
			t.Errorf("initialize: %s", b)
		}
		for _, tc := range []struct {
			method, params string
			code           float64
		}{
			{"tools/call", `{"name":"members","arguments":{},"task":{}}`, -32601},
			{"tools/call", `{"name":"call_action","arguments":{"member":"planner"},"task":{}}`, -32602},
			{"tools/call", `{"name":"call_action","arguments":"nonsense","task":{}}`, -32602},
			{"tasks/get", ``, -32602},
			{"tasks/get", `{"taskId":"req-000000000000"}`, -32602},
			{"tasks/result", `{}`, -32602},
			{"tasks/cancel", `{"taskId":""}`, -32602},
		} {
			if got := errCode(c.call(tc.method, tc.params)); got != tc.code {
				t.Errorf("%s %s: code %v, want %v", tc.method, tc.params, got, tc.code)
			}
		}
		if l := c.call("tasks/list", ""); errCode(l) != 0 {
			t.Errorf("tasks/list without params: %v", l)
		}

		created := c.call("tools/call", `{"name":"call_action","arguments":{"member":"planner","action":"act","prompt":"go"},"task":{"ttl":60000}}`)
		task, _ := created["result"].(map[string]any)["task"].(map[string]any)
		id := fmt.Sprint(task["taskId"])
		if task["status"] != "working" || task["ttl"] != float64(60000) || task["createdAt"] == nil {
			t.Fatalf("CreateTaskResult: %v", created)
		}
		testkit.WaitFor(t, 20*time.Second, "input_required", func() bool {
			r, _ := c.call("tasks/get", `{"taskId":"`+id+`"}`)["result"].(map[string]any)
			return r["status"] == "input_required" && strings.Contains(fmt.Sprint(r["statusMessage"]), k.PendingPlan("planner").ID)
		})
		waiting := c.send("tasks/result", `{"taskId":"`+id+`"}`)
		if _, err := k.Decide(k.PendingPlan("planner").ID, protocol.EventApprove, ""); err != nil {
			t.Fatal(err)
		}
		res, _ := c.answer(waiting)["result"].(map[string]any)
		rb, _ := json.Marshal(res)
		if !strings.Contains(string(rb), `"text":"planner acted"`) || !strings.Contains(string(rb), `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
			t.Errorf("tasks/result: %s", rb)
		}
		if r, _ := c.call("tasks/get", `{"taskId":"`+id+`"}`)["result"].(map[string]any); r["status"] != "completed" {
			t.Errorf("tasks/get after: %v", r)
		}
		// Another caller does not see it.
		other := rawConnect(t, d, "someone-else")
		if got := errCode(other.call("tasks/get", `{"taskId":"`+id+`"}`)); got != -32602 {
			t.Errorf("another caller's tasks/get: code %v", got)
		}
	})
}
