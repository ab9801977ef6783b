package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// roleEnv names the role a test binary re-executed by these tests plays:
// "bash" runs $HUDDLE_LLM_TEST_COMMAND through an agent's bash tool in the
// directory $HUDDLE_LLM_TEST_DIR, as huddle would with the environment the
// test gave it, and prints the result.
const roleEnv = "HUDDLE_LLM_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "bash" {
		os.Exit(playBash())
	}
	os.Exit(m.Run())
}

func playBash() int {
	a, err := NewAgent(Config{Model: zeroModel{}, Tools: []string{"bash"}, Dir: os.Getenv("HUDDLE_LLM_TEST_DIR"), Env: &fakeEnv{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	args, _ := json.Marshal(map[string]string{"command": os.Getenv("HUDDLE_LLM_TEST_COMMAND")})
	text, _, _ := a.runTool(context.Background(), call("b", "bash", string(args)))
	fmt.Print(text)
	return 0
}
