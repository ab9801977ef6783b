package protocol

import "fmt"

// Lead is the reserved name of the team's lead.
const Lead = "lead"

// Names match ^[a-z0-9][a-z0-9._-]{0,62}$ and ids
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$. They are checked byte by byte, not
// by a regexp: every line encoded or decoded checks three of them, and a
// regexp match cost a fifth of an append (docs/PERFORMANCE.md).

// isName reports whether name matches ^[a-z0-9][a-z0-9._-]{0,62}$.
func isName(name string) bool {
	if len(name) == 0 || len(name) > 63 || !lowerOrDigit(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !lowerOrDigit(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// isID reports whether id matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.
func isID(id string) bool {
	if len(id) == 0 || len(id) > 64 || !alnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerOrDigit(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func alnum(c byte) bool { return lowerOrDigit(c) || 'A' <= c && c <= 'Z' }

// ValidateName checks that name can address a mailbox: a member name or the
// lead. It runs before a name ever becomes part of a path.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty")
	}
	if !isName(name) {
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
	if !isID(id) {
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
