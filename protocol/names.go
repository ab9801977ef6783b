package protocol

import (
	"fmt"
	"regexp"
)

// Lead is the reserved name of the team's lead.
const Lead = "lead"

var (
	memberNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	idRE         = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// ValidateName checks that name can address a mailbox: a member name or the
// lead. It runs before a name ever becomes part of a path.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty")
	}
	if !memberNameRE.MatchString(name) {
		return fmt.Errorf("invalid name %q: want 1-63 of a-z 0-9 . _ - starting with a letter or digit", clip(name, 80))
	}
	return nil
}

// ValidateMemberName checks a teammate's name: a valid name that is not the
// reserved lead.
func ValidateMemberName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if name == Lead {
		return fmt.Errorf("name %q is reserved for the lead", name)
	}
	return nil
}

// ValidateID checks an id chosen by anyone (ours or a foreign agent's) before
// it becomes part of a file name.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("id is empty")
	}
	if !idRE.MatchString(id) {
		return fmt.Errorf("invalid id %q: want 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit", clip(id, 80))
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
