package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"huddle/protocol"
)

// ExecTarget runs a command per call: the request JSON on its stdin, one
// InvocationResult on its stdout. Anything else (garbage, a mismatched
// request id, a crash) is INVALID_RESPONSE with the reason.
type ExecTarget struct {
	Command []string
	Dir     string
	Env     []string
}

func (t ExecTarget) Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	if len(t.Command) == 0 {
		return protocol.InvocationResult{}, errors.New("exec target without a command")
	}
	in, err := json.Marshal(req)
	if err != nil {
		return protocol.InvocationResult{}, err
	}
	cmd := exec.CommandContext(ctx, t.Command[0], t.Command[1:]...)
	cmd.Dir, cmd.Env = t.Dir, t.Env
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var out limitedBuffer
	out.limit = protocol.MaxLine
	var errOut limitedBuffer
	errOut.limit = 4 << 10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = time.Second // children holding the pipes open do not hold the call
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return protocol.InvocationResult{}, ctx.Err()
	}
	if runErr != nil {
		var exitErr *exec.ExitError
		if errors.As(runErr, &exitErr) {
			reason := fmt.Sprintf("%s exited with %s", t.Command[0], exitErr.ProcessState)
			if tail := strings.TrimSpace(errOut.String()); tail != "" {
				reason += ": " + lastLine(tail)
			}
			return protocol.InvocationResult{}, &InvalidResponse{Reason: reason}
		}
		return protocol.InvocationResult{}, fmt.Errorf("run %s: %w", t.Command[0], runErr)
	}
	if out.over {
		return protocol.InvocationResult{}, &InvalidResponse{Reason: "the answer exceeds 1 MiB", Answer: out.String()}
	}
	body := bytes.TrimSpace(out.Bytes())
	if len(body) == 0 {
		return protocol.InvocationResult{}, &InvalidResponse{Reason: "nothing on stdout"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var res protocol.InvocationResult
	if err := dec.Decode(&res); err != nil {
		return protocol.InvocationResult{}, &InvalidResponse{Reason: "stdout is not an InvocationResult: " + err.Error(), Answer: string(body)}
	}
	if dec.More() {
		return protocol.InvocationResult{}, &InvalidResponse{Reason: "more than one JSON value on stdout", Answer: string(body)}
	}
	return res, nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// limitedBuffer keeps the first limit bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

var _ io.Writer = (*limitedBuffer)(nil)
