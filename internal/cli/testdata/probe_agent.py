# An exec teammate that reports what docs/agents.md says it gets: its
# working directory, HUDDLE_DIR and HUDDLE_MEMBER (to the lead), an
# invocation_result for its invoke, an invocation_request it answers, its
# stderr in members/<name>.log, and SIGINT on stop.
import json, os, signal, sys

def act(**a):
    print(json.dumps(a), flush=True)

def on_sigint(signum, frame):
    print("probe: SIGINT", file=sys.stderr, flush=True)
    sys.exit(0)

signal.signal(signal.SIGINT, on_sigint)
print("probe: started", file=sys.stderr, flush=True)
act(action="send", to="lead", content=json.dumps({"cwd": os.getcwd(), "dir": os.environ.get("HUDDLE_DIR"), "member": os.environ.get("HUDDLE_MEMBER")}))
act(action="invoke", target="greeter", name="greet", prompt="hi", timeout_sec=20)
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "invocation_result":
        act(action="send", to="lead", content="result: " + json.dumps(m["result"]))
    elif m["type"] == "invocation_request":
        inv = m["invocation"]
        act(action="result", result={"request_id": inv["request_id"], "correlation_id": inv["correlation_id"],
                                     "status": "ok", "duration_ms": 1, "result": {"summary": "probed: " + inv["prompt"]}})
print("probe: stdin closed", file=sys.stderr, flush=True)
signal.pause()
