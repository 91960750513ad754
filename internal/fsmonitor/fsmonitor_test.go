package fsmonitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
)

// The test binary is also the hook: git runs it (core.fsmonitor) with
// "2 TOKEN", and it answers from the journal the test saved in a file.
const hookEnv = "GITNFS_FSMONITOR_TEST_JOURNAL"

type savedJournal struct {
	Instance string
	Limit    int
	Changes  [][]string
}

func TestMain(m *testing.M) {
	if name := os.Getenv(hookEnv); name != "" {
		os.Exit(hook(name))
	}
	os.Exit(m.Run())
}

func hook(name string) int {
	data, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var s savedJournal
	if err := json.Unmarshal(data, &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	j := NewJournal(s.Instance, s.Limit)
	for _, c := range s.Changes {
		j.Record(c...)
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "hook args:", os.Args)
		return 1
	}
	log, err := os.OpenFile(name+".queries", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		fmt.Fprintf(log, "%s %s\n", os.Args[1], os.Args[2])
		log.Close()
	}
	if ok, err := j.Answer(os.Stdout, os.Args[1], os.Args[2]); !ok || err != nil {
		return 1
	}
	return 0
}

func TestSince(t *testing.T) {
	j := NewJournal("a", 100)
	t0 := j.Token()
	j.Record("x", "d/y")
	t1 := j.Token()
	j.Record("x", "z")
	for _, c := range []struct {
		token string
		want  []string
	}{
		{t0, []string{"x", "d/y", "z"}},
		{t1, []string{"x", "z"}},
		{j.Token(), nil},
		{"1733230000000000000", []string{Everything}}, // git's first, made-up token
		{"gitnfs:b:0", []string{Everything}},          // another instance's
		{"gitnfs:a:99", []string{Everything}},         // from a future this journal never had
		{"gitnfs:a:", []string{Everything}},
		{"", []string{Everything}},
	} {
		now, got := j.Since(c.token)
		if !slices.Equal(got, c.want) || now != "gitnfs:a:4" {
			t.Errorf("Since(%q) = %q %q, want %q", c.token, now, got, c.want)
		}
	}
}

func TestSinceTooOld(t *testing.T) {
	j := NewJournal("a", 4)
	old := j.Token()
	j.Record("1", "2", "3")
	j.Record("4", "5", "6")
	if _, got := j.Since(old); !slices.Equal(got, []string{Everything}) {
		t.Fatalf("a token older than the kept changes: %q", got)
	}
	recent := j.Token()
	j.Record("7")
	if _, got := j.Since(recent); !slices.Equal(got, []string{"7"}) {
		t.Fatalf("a recent token: %q", got)
	}
	for i := range 1000 {
		j.Record(fmt.Sprint(i))
		if len(j.changes) > 4 {
			t.Fatalf("%d changes kept, limit 4", len(j.changes))
		}
	}
}

func TestAnswerFormat(t *testing.T) {
	j := NewJournal("a", 10)
	t0 := j.Token()
	j.Record("a b", "dir/")
	var b bytes.Buffer
	if ok, err := j.Answer(&b, "2", t0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if want := "gitnfs:a:2\x00a b\x00dir/\x00"; b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
	b.Reset()
	if ok, _ := j.Answer(&b, "1", t0); ok || b.Len() != 0 {
		t.Fatalf("version 1 answered: %q", b.String())
	}
}

// git status believes the hook: a file changed on disk but not in the
// journal is not looked at (git reports it clean); recorded, it is
// reported; a token git made up or from another instance makes git check
// everything, and it finds the change. The tokens git passes back are ours.
func TestGitStatusUsesTheAnswers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt":   {Mode: "100644", Data: []byte("a\n")},
		"d/b.txt": {Mode: "100644", Data: []byte("b\n")},
		"c.txt":   {Mode: "100644", Data: []byte("c\n")},
	}, "c")
	testrepo.Git(t, repo, "reset", "-q", "--hard")
	testrepo.Git(t, repo, "config", "core.fsmonitor", self)
	testrepo.Git(t, repo, "config", "core.fsmonitorHookVersion", "2")

	saved := filepath.Join(t.TempDir(), "journal.json")
	s := savedJournal{Instance: "one", Limit: 100}
	save := func() {
		data, _ := json.Marshal(s)
		if err := os.WriteFile(saved, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := func() string {
		t.Helper()
		cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=no")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), hookEnv+"="+saved, "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("git status: %v: %s", err, stderr.String())
		}
		return string(out)
	}
	queries := func() []string {
		data, _ := os.ReadFile(saved + ".queries")
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}

	save()
	// First status: git's own token, answered "/": a full check, then git
	// stores our token.
	if out := status(); out != "" {
		t.Fatalf("first status: %q", out)
	}
	if q := queries(); len(q) != 1 || strings.HasPrefix(q[0], "2 gitnfs:") {
		t.Fatalf("first query: %q", q)
	}
	// A change the journal does not know: git does not look.
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := status(); out != "" {
		t.Fatalf("status with nothing recorded: %q (git did not trust the hook)", out)
	}
	if q := queries(); q[len(q)-1] != "2 gitnfs:one:0" {
		t.Fatalf("git passed %q, not our token", q[len(q)-1])
	}
	// Recorded: reported.
	s.Changes = append(s.Changes, []string{"a.txt"})
	save()
	if out := status(); out != " M a.txt\n" {
		t.Fatalf("status with a.txt recorded: %q", out)
	}
	// A directory entry covers what is below it.
	if err := os.WriteFile(filepath.Join(repo, "d", "b.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Changes = append(s.Changes, []string{"d/"})
	save()
	if out := status(); out != " M a.txt\n M d/b.txt\n" {
		t.Fatalf("status with d/ recorded: %q", out)
	}
	// Another instance (a restarted server): everything, so the unrecorded
	// change to c.txt is found.
	if err := os.WriteFile(filepath.Join(repo, "c.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := status(); out != " M a.txt\n M d/b.txt\n" {
		t.Fatalf("c.txt seen without a record: %q", out)
	}
	s = savedJournal{Instance: "two", Limit: 100}
	save()
	if out := status(); out != " M a.txt\n M c.txt\n M d/b.txt\n" {
		t.Fatalf("status after a restart: %q", out)
	}
}

// An index written with the journal's token (gitindex's FSMN, every entry
// valid) makes even the first git status ask the hook with that token and
// check only what it answers: a file changed before that status, but not
// recorded, is not looked at, so git walked nothing.
func TestFirstStatusFromOurIndex(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	repo := testrepo.Init(t, false)
	testrepo.Commit(t, repo, map[string]testrepo.File{
		"a.txt":   {Mode: "100644", Data: []byte("a\n")},
		"d/b.txt": {Mode: "100644", Data: []byte("b\n")},
	}, "c")
	testrepo.Git(t, repo, "reset", "-q", "--hard")
	testrepo.Git(t, repo, "config", "core.fsmonitor", self)
	testrepo.Git(t, repo, "config", "core.fsmonitorHookVersion", "2")

	s, err := tree.Open(repo, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Resolve("HEAD")
	if err != nil {
		t.Fatal(err)
	}
	ix, err := gitindex.Build(s, snap.Root, func(path string, _ tree.Entry, _ int64) (gitindex.Stat, error) {
		fi, err := os.Lstat(filepath.Join(repo, path))
		if err != nil {
			return gitindex.Stat{}, err
		}
		st := fi.Sys().(*syscall.Stat_t)
		return gitindex.Stat{
			Ctime: gitindex.Time{Sec: uint32(st.Ctim.Sec), Nsec: uint32(st.Ctim.Nsec)},
			Mtime: gitindex.Time{Sec: uint32(st.Mtim.Sec), Nsec: uint32(st.Mtim.Nsec)},
			Dev:   uint32(st.Dev), Ino: uint32(st.Ino), UID: st.Uid, GID: st.Gid, Size: uint32(st.Size),
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal("one", 100)
	ix.FSMonitorToken = j.Token()
	index := filepath.Join(repo, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := gitindex.WriteFile(index, ix); err != nil {
		t.Fatal(err)
	}

	saved := filepath.Join(t.TempDir(), "journal.json")
	data, _ := json.Marshal(savedJournal{Instance: "one", Limit: 100})
	if err := os.WriteFile(saved, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=no")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), hookEnv+"="+saved, "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "" {
		t.Fatalf("first status: %q (git checked a file the hook did not report)", out)
	}
	q, _ := os.ReadFile(saved + ".queries")
	if string(q) != "2 gitnfs:one:0\n" {
		t.Fatalf("hook queries: %q, want one with the index's token", q)
	}
}
