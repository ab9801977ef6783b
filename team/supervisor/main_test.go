package supervisor

import (
	"testing"

	"huddle/internal/testkit/teamkit"
)

// testRoles are the exec teammates of these tests: the test binary,
// re-executed with teamkit.RoleEnv naming one. Test files add theirs from
// an init func.
var testRoles = map[string]func() int{}

func TestMain(m *testing.M) { teamkit.Main(m, testRoles) }
