package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/internal/fsmonitor"
	"github.com/gitnfs/gitnfs/internal/worktree"
)

// newFSMonitorHook is git's fsmonitor hook for an export (core.fsmonitor
// in its config.worktree): git runs it in the mount with "2 TOKEN"; it
// asks the server on loopback (the address in the admin directory), not
// through the mount, whose caches could hide a change.
func newFSMonitorHook() *cobra.Command {
	return &cobra.Command{
		Use:    "fsmonitor-hook VERSION TOKEN",
		Short:  "git's fsmonitor hook of a gitnfs export (run by git, not by hand)",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			gitDir, err := hookGitDir()
			if err != nil {
				return err
			}
			addr, journal, err := worktree.FSMonitorAddr(gitDir)
			if err != nil {
				return fmt.Errorf("fsmonitor-hook: not a gitnfs export's worktree: %w", err)
			}
			return fsmonitor.Query(addr, journal, args[0], args[1], cmd.OutOrStdout())
		},
	}
}

// hookGitDir is the worktree's git directory: GIT_DIR, which git sets for
// the commands it runs, or what git rev-parse says.
func hookGitDir() (string, error) {
	if d := os.Getenv("GIT_DIR"); d != "" {
		return filepath.Abs(d)
	}
	out, err := exec.Command("git", "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		return "", fmt.Errorf("fsmonitor-hook: git rev-parse --absolute-git-dir: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
