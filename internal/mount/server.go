package mount

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// Banner is what the first line of `gitnfs serve` says.
type Banner struct {
	Repo   string // absolute path
	Rev    string // as asked
	Object string // "commit 3f2a1c9e0b7d" or "tree ..."
	Addr   string // HOST:PORT the server listens on
}

var bannerRE = regexp.MustCompile(`^gitnfs: serving (.*) at (\S+) \(((?:commit|tree) [0-9a-f]+)\) on (\S+)$`)

// ParseBanner reads the first line `gitnfs serve` prints once it listens:
//
//	gitnfs: serving REPO at REV (commit ID) on HOST:PORT
func ParseBanner(line string) (Banner, error) {
	m := bannerRE.FindStringSubmatch(line)
	if m == nil {
		return Banner{}, fmt.Errorf("unexpected first line from gitnfs serve: %q", line)
	}
	return Banner{Repo: m[1], Rev: m[2], Object: m[3], Addr: m[4]}, nil
}

// IsServer reports whether args (a process's command line) is the gitnfs
// server that s records, so that a pid reused by another program is never
// signalled.
func IsServer(s State, args []string) bool {
	if len(args) < 2 || args[1] != "serve" {
		return false
	}
	if s.Executable == "" {
		return filepath.Base(args[0]) == "gitnfs"
	}
	return args[0] == s.Executable || filepath.Base(args[0]) == filepath.Base(s.Executable)
}
