package mount

import (
	"fmt"
	"strings"
)

// NeedsRoot reports whether mounting (or unmounting) NFS on goos as effective
// user euid needs root. Linux refuses NFS mounts to other users (short of an
// fstab "user" entry); macOS lets a user mount on a directory they own.
func NeedsRoot(goos string, euid int) bool { return goos == "linux" && euid != 0 }

// NeedRootError says that an operation needs root and what to run instead.
type NeedRootError struct {
	What    string   // "mounting NFS", "unmounting NFS"
	Command []string // the command to run again under sudo, program first
}

func (e *NeedRootError) Error() string {
	return fmt.Sprintf("%s on Linux needs root; run it with sudo:\n  %s", e.What, ShellJoin(append([]string{"sudo"}, e.Command...)))
}

// CheckRoot returns a *NeedRootError when NeedsRoot(goos, euid), naming the
// command to run again with sudo: argv with argv[0] replaced by exe (an
// absolute path, since sudo's secure_path rarely includes the user's bin).
func CheckRoot(goos string, euid int, what, exe string, argv []string) error {
	if !NeedsRoot(goos, euid) {
		return nil
	}
	cmd := append([]string(nil), argv...)
	if len(cmd) == 0 {
		cmd = []string{"gitnfs"}
	}
	if exe != "" {
		cmd[0] = exe
	}
	return &NeedRootError{What: what, Command: cmd}
}

// ShellJoin quotes args for a POSIX shell, leaving plain words as they are.
func ShellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes one argument for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	plain := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,=+@%^", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
