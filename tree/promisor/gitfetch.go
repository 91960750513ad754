package promisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitProgram is the git that runs (git fetch, and upload-pack for a local
// remote): the one in PATH, as for whoever made the clone; no setting
// names another.
const gitProgram = "git"

// fetchArgs is git's own lazy fetch, word for word (promisor-remote.c,
// fetch_objects, git 2.39): no negotiation (the ids are what is wanted, not
// refs), no tags, no FETCH_HEAD, no submodules, and blob:none so that a
// wanted tree comes with its subtrees but not their blobs. The ids go on
// stdin, one a line. git fetch writes what it receives as a new pack (with
// a .promisor marker) and runs its own auto-maintenance, which repacks when
// there are more than gc.autoPackLimit (50) packs: the object store stays
// one that git wrote and git keeps tidy.
func fetchArgs(remote string) []string {
	return []string{"-c", "fetch.negotiationAlgorithm=noop",
		"fetch", remote, "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--filter=blob:none", "--stdin"}
}

// childEnv is the environment git runs in: the repository named by
// GIT_DIR alone (variables that would point git at another object store
// or work tree are dropped), and never a prompt for credentials on the
// server's terminal.
func childEnv(gitDir string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE", "GIT_NAMESPACE",
			"GIT_TERMINAL_PROMPT", "GIT_PROTOCOL", "GIT_NO_LAZY_FETCH":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_DIR="+gitDir, "GIT_TERMINAL_PROMPT=0")
}

// runFetch runs one git fetch of ids from remote.
func runFetch(ctx context.Context, gitDir, remote string, ids []plumbing.Hash) error {
	var stdin strings.Builder
	for _, id := range ids {
		stdin.WriteString(id.String())
		stdin.WriteByte('\n')
	}
	cmd := exec.CommandContext(ctx, gitProgram, fetchArgs(remote)...)
	cmd.Dir = gitDir
	cmd.Env = childEnv(gitDir)
	cmd.Stdin = strings.NewReader(stdin.String())
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	// git fetch starts upload-pack (locally), ssh, index-pack and
	// maintenance: a timeout kills the whole group, and Wait does not wait
	// for a grandchild that kept a pipe open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(stderr.String())
	if ctx.Err() != nil {
		err = fmt.Errorf("git fetch %s: %w", remote, ctx.Err())
	} else {
		err = fmt.Errorf("git fetch %s: %w", remote, err)
	}
	if msg != "" {
		err = fmt.Errorf("%w: %s", err, lastLines(msg, 3))
	}
	return &fetchError{err: err, lacking: lackingIDs(msg)}
}

// fetchError is a failed git fetch. lacking: the remote is up but refused
// ids it does not have (upload-pack's "not our ref <id>", which names the
// first), which is no reason to back off from it.
type fetchError struct {
	err     error
	lacking []plumbing.Hash
}

// lackingIDs finds the ids upload-pack said it does not have.
func lackingIDs(stderr string) []plumbing.Hash {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for rest := stderr; ; {
		i := strings.Index(rest, "not our ref ")
		if i < 0 {
			return out
		}
		rest = rest[i+len("not our ref "):]
		if len(rest) >= 40 {
			if id, ok := parseHash(rest[:40]); ok && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
}

func parseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || strings.Trim(s, "0123456789abcdef") != "" {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
