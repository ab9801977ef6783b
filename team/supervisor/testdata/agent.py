import json, sys

def act(**a):
    print(json.dumps(a), flush=True)

act(action="status", status="idle", activity="listening")
act(action="plan", plan="Audit November's invoices")
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "plan_approval_response":
        if m["approve"]:
            act(action="status", status="working", activity="auditing")
        elif m.get("reason") == "expired":
            act(action="plan", plan="Audit November's invoices")
        elif m.get("reason") != "cancelled":  # cancelled: a newer plan of ours waits
            act(action="plan", plan="Audit November's invoices. " + m.get("feedback", ""))
    elif m["type"] in ("message", "broadcast"):
        act(action="send", to=m["from"], content="audited: " + m["content"])
    elif m["type"] == "shutdown_request":
        act(action="shutdown_response", request_id=m["request_id"], approve=True, reason="done")
        sys.exit(0)
