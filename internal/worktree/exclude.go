package worktree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// SillyRenameRule is the exclude pattern of NFS clients' silly-renamed
// files: a file removed while open is renamed by the client to
// ".nfs" and hex digits (Linux fs/nfs/unlink.c: ".nfs%016llx%08x"; macOS
// ".nfs.%08x.%04x") until it is closed, and shows in listings meanwhile.
const SillyRenameRule = ".nfs*"

// sillyRenameComment introduces the rule in info/exclude, so that a reader
// knows who wrote it.
const sillyRenameComment = "# gitnfs: NFS clients' silly-renamed files (a file removed while open) are never untracked files"

// ExcludeSillyRenames adds SillyRenameRule to the repository's
// $GIT_COMMON_DIR/info/exclude unless a line already says it. git reads
// info/exclude from the common directory only (path.c's common_list: a
// linked worktree has no info/ of its own), and the one per-worktree
// alternative, core.excludesFile in config.worktree, needs
// extensions.worktreeConfig in the shared config and would replace the
// user's global excludes file: so the rule is the common one, which no
// worktree of the repository wants to track either. The line is appended
// (never rewritten), and left when the export stops.
func ExcludeSillyRenames(commonDir string) error {
	path := filepath.Join(commonDir, "info", "exclude")
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("worktree: %w", err)
	}
	for _, line := range bytes.Split(old, []byte("\n")) {
		if string(bytes.TrimSpace(line)) == SillyRenameRule {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	var add []byte
	if len(old) > 0 && old[len(old)-1] != '\n' {
		add = append(add, '\n')
	}
	add = append(add, sillyRenameComment+"\n"+SillyRenameRule+"\n"...)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	_, err = f.Write(add)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}
