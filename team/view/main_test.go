package view

import (
	"testing"

	"huddle/internal/testkit/teamkit"
)

// TestMain lets a test re-execute the binary as a racing resolver
// (teamkit.RunResolver).
func TestMain(m *testing.M) { teamkit.Main(m, nil) }
