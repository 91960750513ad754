package merge3

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The tests compare against the real `git merge-file`, run at test time.

var (
	gitOnce    sync.Once
	gitPath    string
	gitVersion string
	gitErr     error
)

// requireGit finds git; the oracle is the point of these tests, so its
// absence fails them rather than skipping.
func requireGit(t testing.TB) string {
	t.Helper()
	gitOnce.Do(func() {
		gitPath, gitErr = exec.LookPath("git")
		if gitErr != nil {
			return
		}
		out, err := exec.Command(gitPath, "version").Output()
		if err != nil {
			gitErr = err
			return
		}
		gitVersion = strings.TrimSpace(string(out))
	})
	if gitErr != nil {
		t.Fatalf("git is needed as the reference for merge3 tests: %v", gitErr)
	}
	return gitPath
}

// gitEnv isolates git from user, system and repository configuration: a
// merge.conflictStyle setting would silently change merge-file's output.
func gitEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") ||
			strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+dir,
		"XDG_CONFIG_HOME="+dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"LC_ALL=C",
	)
}

func writeFile(dir, name string, b []byte) error {
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

// gitCommand is git run in dir with an isolated environment.
func gitCommand(git, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(git, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	return cmd
}

// gitArgs are the merge-file options equivalent to opts.
func gitArgs(opts Options) []string {
	var args []string
	switch opts.Style {
	case StyleDiff3:
		args = append(args, "--diff3")
	case StyleZealousDiff3:
		args = append(args, "--zdiff3")
	}
	switch opts.Favor {
	case FavorOurs:
		args = append(args, "--ours")
	case FavorTheirs:
		args = append(args, "--theirs")
	case FavorUnion:
		args = append(args, "--union")
	}
	if opts.MarkerSize > 0 {
		args = append(args, "--marker-size="+strconv.Itoa(opts.MarkerSize))
	}
	return append(args, "-L", opts.Labels.Ours, "-L", opts.Labels.Base, "-L", opts.Labels.Theirs)
}

// gitMergeFile runs `git merge-file -p` in dir and returns its output and
// exit status (the conflict count, capped at 127). It returns errors rather
// than failing t because the randomized tests call it from workers.
func gitMergeFile(git, dir string, base, ours, theirs []byte, opts Options) ([]byte, int, error) {
	for name, b := range map[string][]byte{"base": base, "ours": ours, "theirs": theirs} {
		if err := writeFile(dir, name, b); err != nil {
			return nil, 0, err
		}
	}
	args := append([]string{"merge-file", "-p"}, gitArgs(opts)...)
	args = append(args, "ours", "base", "theirs")
	cmd := gitCommand(git, dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	status := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, 0, fmt.Errorf("git merge-file: %v", err)
		}
		status = ee.ExitCode()
	}
	if status > 127 {
		return nil, 0, fmt.Errorf("git merge-file failed (status %d): %s", status, stderr.String())
	}
	return stdout.Bytes(), status, nil
}

// compareWithGit merges with MergeWith and git and describes any
// difference, or git's failure ("" when identical). Safe to call from any
// goroutine once requireGit has run.
func compareWithGit(dir string, base, ours, theirs []byte, opts Options) string {
	want, status, err := gitMergeFile(gitPath, dir, base, ours, theirs, opts)
	if err != nil {
		return err.Error()
	}
	got := MergeWith(base, ours, theirs, opts)
	var problems []string
	if !bytes.Equal(got.Content, want) {
		problems = append(problems, fmt.Sprintf("content differs:\n got: %q\nwant: %q", got.Content, want))
	}
	if min(got.Conflicts, 127) != status {
		problems = append(problems, fmt.Sprintf("conflicts = %d, git exit status %d", got.Conflicts, status))
	}
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("style=%v favor=%d marker=%d\nbase:   %q\nours:   %q\ntheirs: %q\n%s",
		opts.Style, opts.Favor, opts.MarkerSize, base, ours, theirs, strings.Join(problems, "\n"))
}
