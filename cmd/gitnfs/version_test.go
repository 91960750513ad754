package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVersionPrints(t *testing.T) {
	out, err := run(t, "version")
	if err != nil || !strings.HasPrefix(out, "gitnfs ") {
		t.Errorf("version: %q, %v", out, err)
	}
	flag, err := run(t, "--version")
	if err != nil || flag != out {
		t.Errorf("gitnfs --version = %q, %v; want what gitnfs version prints, %q", flag, err, out)
	}
}

// repoRoot is the checkout this package is in (the Makefile's directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skipf("no Makefile at %s: %v", root, err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	return root
}

func TestMakeBuildStampsGitDescribe(t *testing.T) {
	root := repoRoot(t)
	want, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gitnfs")
	// -buildvcs=false: the stamp must not depend on Go's own VCS stamping,
	// which a worktree, a tarball or GOFLAGS can turn off.
	mk := exec.Command("make", "-C", root, "build", "BIN="+bin)
	mk.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	got, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if w := "gitnfs " + strings.TrimSpace(string(want)) + "\n"; string(got) != w {
		t.Errorf("make build's gitnfs version = %q, want %q", got, w)
	}
}

func TestMakeHelpListsEveryTarget(t *testing.T) {
	root := repoRoot(t)
	mf, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	help, err := exec.Command("make", "-s", "-C", root, "help").Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	targets := regexp.MustCompile(`(?m)^([a-z][a-z0-9_-]*):`).FindAllStringSubmatch(string(mf), -1)
	if len(targets) < 5 {
		t.Fatalf("found only %d targets in the Makefile", len(targets))
	}
	for _, m := range targets {
		if !regexp.MustCompile(`(?m)^make ` + regexp.QuoteMeta(m[1]) + ` +\S`).Match(help) {
			t.Errorf("make help has no line for target %s:\n%s", m[1], help)
		}
	}
}
