package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/macmodel"
	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// The model of Apple's NFSv3 client (internal/macmodel, written from
// Apple's source, not a run on macOS) against every kind of export
// gitnfs serve makes: each workload of the seed document's census, with
// zero errors, and what it sees equal to git's own listing and blobs.

// macRepo: main (v1 tagged) and topic, merging cleanly; directories deep
// and wide (a 120-entry one needs several READDIRPLUS calls at 4 KiB).
func macRepo(t *testing.T) string {
	repo := testrepo.Init(t, true)
	files := map[string]testrepo.File{
		"README.md":         {Mode: "100644", Data: []byte("# hi\n")},
		"src/main.go":       {Mode: "100644", Data: []byte("package main\n")},
		"src/lib/a/b/c.go":  {Mode: "100644", Data: []byte("package b\n")},
		"bin/run.sh":        {Mode: "100755", Data: []byte("#!/bin/sh\n")},
		"link":              {Mode: "120000", Data: []byte("README.md")},
		"data/big.bin":      {Mode: "100644", Data: bytes.Repeat([]byte("0123456789abcdef"), 5000)},
		"shared/conflict.c": {Mode: "100644", Data: []byte("1\n2\n3\n4\n5\n")},
	}
	for i := 0; i < 120; i++ {
		files[fmt.Sprintf("wide/entry-%03d.txt", i)] = testrepo.File{Mode: "100644", Data: []byte(fmt.Sprint(i))}
	}
	testrepo.Commit(t, repo, files, "base")
	testrepo.Git(t, repo, "tag", "v1")
	testrepo.Git(t, repo, "branch", "topic")
	files["src/main.go"] = testrepo.File{Mode: "100644", Data: []byte("package main // ours\n")}
	testrepo.Commit(t, repo, files, "ours")
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/topic")
	files["src/main.go"] = testrepo.File{Mode: "100644", Data: []byte("package main\n")}
	files["shared/theirs.txt"] = testrepo.File{Mode: "100644", Data: []byte("theirs\n")}
	testrepo.Commit(t, repo, files, "theirs")
	testrepo.Git(t, repo, "symbolic-ref", "HEAD", "refs/heads/main")
	return repo
}

func macOpts() macmodel.Options {
	return macmodel.Options{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
}

func startMac(t *testing.T, args ...string) string {
	t.Helper()
	addr, _, out := startGitnfs(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	if addr == "" {
		t.Fatalf("serve %v: %s", args, out)
	}
	return addr
}

// logRows reports a census (go test -v prints it; bench/ has the table).
func logRows(t *testing.T, kind string, rows map[macmodel.Workload]macmodel.Row) {
	for _, w := range []macmodel.Workload{macmodel.NamesOnly, macmodel.FindTypeF, macmodel.LsLR, macmodel.ReadEvery} {
		r := rows[w]
		t.Logf("%s, %s: %d dirs, %d entries, %d calls %v; READDIRPLUS+ACCESS per dir %.2f, LOOKUP per entry %.3f",
			kind, w, r.Dirs, r.Entries, r.Total, r.Calls, r.PerDir("READDIRPLUS", "ACCESS"), r.LookupsPerEntry())
	}
}

func TestMacModelPlain(t *testing.T) {
	repo := macRepo(t)
	addr := startMac(t, "--repo", repo, "--rev", "main")
	for _, o := range []macmodel.Options{macOpts(), func() macmodel.Options { o := macOpts(); o.RSize, o.DSize = 4096, 4096; return o }()} {
		logRows(t, fmt.Sprintf("plain rsize=%d", o.RSize), macmodel.CheckWorktree(t, addr, o, repo, "main"))
	}
	// A subdirectory mount.
	o := macOpts()
	o.Path = "/src"
	macmodel.CheckWorkloads(t, addr, o, repo, "main:src")
}

func TestMacModelRevisionExport(t *testing.T) {
	repo := macRepo(t)
	addr := startMac(t, "--repo", repo, "--rev", "main")
	o := macOpts()
	o.Path = "/v1:"
	macmodel.CheckWorktree(t, addr, o, repo, "v1")
	o.Path = "/topic:src"
	macmodel.CheckWorkloads(t, addr, o, repo, "topic:src")
	// The hidden directory: a mount of .gitnfs/rev/v1, and a walk into it
	// from the root through its junction.
	o.Path = "/.gitnfs/rev/v1"
	macmodel.CheckWorktree(t, addr, o, repo, "v1")
	c, err := macmodel.Mount(addr, macOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Unmount()
	ctl, _, err := c.Lookup(c.Root, ".gitnfs")
	if err != nil {
		t.Fatal(err)
	}
	rev, _, err := c.Lookup(ctl, "rev")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := c.ReadDir(rev)
	if err != nil {
		t.Fatalf("listing .gitnfs/rev: %v", err)
	}
	if !strings.Contains(strings.Join(macmodel.Names(ents), " "), "v1") {
		t.Fatalf(".gitnfs/rev lists %v", macmodel.Names(ents))
	}
	v1, _, err := c.Lookup(rev, "v1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Walk(v1, macmodel.ReadEvery)
	if err != nil {
		t.Fatalf("walking .gitnfs/rev/v1: %v", err)
	}
	// The revision's root is a working copy of v1: .git beside the tree.
	if want := len(testrepo.LsTree(t, repo, "v1")) + 1; len(r.Paths) != want {
		t.Errorf(".gitnfs/rev/v1: %d paths, want git's %d and .git", len(r.Paths), want-1)
	}
}

func TestMacModelMerge(t *testing.T) {
	repo := macRepo(t)
	addr := startMac(t, "--repo", repo, "--rev", "main", "--merge", "topic")
	tree := strings.Fields(testrepo.Git(t, repo, "merge-tree", "--write-tree", "main", "topic"))[0]
	// Its .git is a merge in progress: HEAD at main (issue 22).
	logRows(t, "merge", macmodel.CheckMergeWorktree(t, addr, macOpts(), repo, tree, "main"))
}

func TestMacModelOverlay(t *testing.T) {
	repo := macRepo(t)
	addr := startMac(t, "--repo", repo, "--rev", "main", "--overlay", filepath.Join(t.TempDir(), "ov"))
	logRows(t, "overlay", macmodel.CheckWorktree(t, addr, macOpts(), repo, "main"))
	finderSession(t, addr)
}

// finderSession is what Finder does in a folder of a read-write mount:
// a new folder renamed, .DS_Store written, a document and its AppleDouble
// "._" file written, renamed and deleted; every listing whole and right.
func finderSession(t *testing.T, addr string) {
	c, err := macmodel.Mount(addr, macOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	root := c.Root
	before, err := c.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	// Finder reads the root's extended attributes: "._." (absent, and
	// skipped by the client: the listing was read whole).
	if _, _, err := c.Lookup(root, "._."); macmodel.Status(err) != macmodel.ErrNoEnt {
		t.Fatalf("._. of the root: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Mkdir(root, "untitled folder")
	must(err)
	must(c.Rename(root, "untitled folder", root, "New"))
	ds, err := c.Create(root, ".DS_Store", true)
	must(err)
	must(c.Write(ds, bytes.Repeat([]byte{0, 0, 0, 1, 'B', 'u', 'd', '1'}, 800)))
	doc, err := c.Create(root, "doc.txt", false)
	must(err)
	body := bytes.Repeat([]byte("finder "), 20000)
	must(c.Write(doc, body))
	ad, err := c.Create(root, "._doc.txt", false)
	must(err)
	must(c.Write(ad, append([]byte{0, 5, 22, 7, 0, 2, 0, 0}, make([]byte, 4088)...)))
	must(c.Rename(root, "doc.txt", root, "doc2.txt"))
	must(c.Rename(root, "._doc.txt", root, "._doc2.txt"))
	ents, err := c.ReadDir(root)
	must(err)
	want := append(macmodel.Names(before), ".DS_Store", "._doc2.txt", "New", "doc2.txt")
	if got, w := macmodel.Names(ents), sortedCopy(want); strings.Join(got, "/") != strings.Join(w, "/") {
		t.Fatalf("after the session the root lists %q, want %q", got, w)
	}
	fh, attr, err := c.Lookup(root, "doc2.txt")
	must(err)
	got, err := c.ReadFile(root, "doc2.txt", fh, attr.Size, true)
	must(err)
	if !bytes.Equal(got, body) {
		t.Fatalf("doc2.txt read back %d bytes, wrote %d", len(got), len(body))
	}
	must(c.Remove(root, "._doc2.txt", false))
	must(c.Remove(root, "doc2.txt", false))
	must(c.Remove(root, "New", true))
	ents, err = c.ReadDir(root)
	must(err)
	if got, w := macmodel.Names(ents), sortedCopy(append(macmodel.Names(before), ".DS_Store")); strings.Join(got, "/") != strings.Join(w, "/") {
		t.Fatalf("after the removals the root lists %q, want %q", got, w)
	}
	// A listing resumed after the entry its cookie names was removed (rm
	// of what a page showed, as Finder's delete of a selection does): no
	// BAD_COOKIE, nothing skipped of what is left.
	wide, _, err := c.Lookup(root, "wide")
	must(err)
	small, err := macmodel.Mount(addr, func() macmodel.Options { o := macOpts(); o.RSize, o.DSize = 4096, 4096; return o }())
	must(err)
	defer small.Close()
	removed := map[string]bool{}
	small.BetweenPages = func() {
		// Remove the first five entries still there: the page's last
		// one among them whenever the page ended there.
		ents, err := c.ReadDir(wide)
		must(err)
		n := 0
		for _, name := range macmodel.Names(ents) {
			if n == 5 {
				break
			}
			must(c.Remove(wide, name, false))
			removed[name] = true
			n++
		}
	}
	listed, err := small.ReadDir(wide)
	if err != nil {
		t.Fatalf("listing %s while its entries are removed: %v", "wide", err)
	}
	seen := map[string]bool{}
	for _, n := range macmodel.Names(listed) {
		seen[n] = true
	}
	for i := 0; i < 120; i++ {
		n := fmt.Sprintf("entry-%03d.txt", i)
		if !seen[n] && !removed[n] {
			t.Errorf("%s: neither removed nor listed", n)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestMacModelFollowMove: a listing that spans a --follow move goes on
// with the cookies and verifier it had (a cookie this server handed out is
// never BAD_COOKIE, which macOS would turn into a silently short listing),
// and after the move every workload sees the new commit.
func TestMacModelFollowMove(t *testing.T) {
	repo := macRepo(t)
	addr := startMac(t, "--repo", repo, "--rev", "main", "--follow", "--poll", "20ms")
	o := macOpts()
	o.RSize, o.DSize = 4096, 4096
	c, err := macmodel.Mount(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wide, _, err := c.Lookup(c.Root, "wide")
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	c.BetweenPages = func() {
		if moved {
			return
		}
		moved = true
		files := map[string]testrepo.File{}
		for _, e := range testrepo.LsTree(t, repo, "main") {
			if e.Type == "blob" {
				files[e.Path] = testrepo.File{Mode: e.Mode, Data: testrepo.CatFile(t, repo, e.ID)}
			}
		}
		for i := 0; i < 40; i++ { // the directory shrinks below the cookie
			delete(files, fmt.Sprintf("wide/entry-%03d.txt", i+80))
		}
		files["wide/added.txt"] = testrepo.File{Mode: "100644", Data: []byte("new\n")}
		testrepo.Commit(t, repo, files, "move")
		waitServed(t, c, "added.txt", wide)
	}
	if _, err := c.ReadDir(wide); err != nil {
		t.Fatalf("a listing across a --follow move: %v", err)
	}
	if !moved {
		t.Fatal("the listing took one call: nothing spanned the move")
	}
	macmodel.CheckWorktree(t, addr, macOpts(), repo, "main")
}

// waitServed waits until name is in dir as a fresh LOOKUP sees it.
func waitServed(t *testing.T, c *macmodel.Client, name string, dir []byte) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, _, err := c.Lookup(dir, name); err == nil {
			return
		}
		c.DropCaches()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", name)
}

// TestMacModelRevDirAcrossRefChange: a listing of .gitnfs/rev that spans a
// change of the refs (most of them deleted between two READDIRPLUS calls)
// ends without BAD_COOKIE: the verifier the client resumes with names the
// refs it was handed out under.
func TestMacModelRevDirAcrossRefChange(t *testing.T) {
	repo := macRepo(t)
	var create, remove strings.Builder
	head := strings.TrimSpace(testrepo.Git(t, repo, "rev-parse", "main"))
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&create, "create refs/tags/t%03d %s\n", i, head)
		if i < 120 {
			fmt.Fprintf(&remove, "delete refs/tags/t%03d\n", i)
		}
	}
	testrepo.Git2(t, repo, []byte(create.String()), "update-ref", "--stdin")
	addr := startMac(t, "--repo", repo, "--rev", "main")
	o := macOpts()
	o.RSize, o.DSize = 4096, 4096
	c, err := macmodel.Mount(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Unmount()
	ctl, _, err := c.Lookup(c.Root, ".gitnfs")
	if err != nil {
		t.Fatal(err)
	}
	rev, _, err := c.Lookup(ctl, "rev")
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	c.BetweenPages = func() {
		if changed {
			return
		}
		changed = true
		testrepo.Git2(t, repo, []byte(remove.String()), "update-ref", "--stdin")
		time.Sleep(1100 * time.Millisecond) // the server reads refs at most a second old
	}
	if _, err := c.ReadDir(rev); err != nil {
		t.Fatalf("listing .gitnfs/rev across a change of the refs: %v", err)
	}
	if !changed {
		t.Fatal("the listing took one call: nothing spanned the change")
	}
}

// TestMacModelErrorReplies: every procedure the model makes, made to fail,
// on a read-only and on an overlay export; each failure must decode whole
// (its post_op_attr or wcc_data), as Apple's client reads it, and come back
// as a status, never as a malformed reply.
func TestMacModelErrorReplies(t *testing.T) {
	repo := macRepo(t)
	for _, kind := range []string{"read-only", "overlay"} {
		args := []string{"--repo", repo, "--rev", "main"}
		if kind == "overlay" {
			args = append(args, "--overlay", filepath.Join(t.TempDir(), "ov"))
		}
		c, err := macmodel.Mount(startMac(t, args...), macOpts())
		if err != nil {
			t.Fatal(err)
		}
		root := c.Root
		file, _, err := c.Lookup(root, "README.md")
		if err != nil {
			t.Fatal(err)
		}
		src, _, err := c.Lookup(root, "src")
		if err != nil {
			t.Fatal(err)
		}
		bogus := append([]byte(nil), root...)
		bogus[len(bogus)-1] ^= 0x5a
		calls := map[string]error{}
		_, calls["GETATTR bogus handle"] = c.Getattr(bogus)
		_, _, calls["LOOKUP in a file"] = c.Lookup(file, "x")
		_, _, calls["LOOKUP bogus handle"] = c.Lookup(bogus, "x")
		_, calls["ACCESS bogus handle"] = c.Access(bogus)
		_, calls["READ of a directory"] = c.ReadFile(root, "src", src, 10, false)
		_, calls["READDIRPLUS of a file"] = c.ReadDir(file)
		_, calls["READLINK of a file"] = c.Readlink(file)
		_, calls["MKDIR over a file"] = c.Mkdir(root, "README.md")
		calls["REMOVE of nothing"] = c.Remove(root, "no-such-file", false)
		calls["RMDIR of a full directory"] = c.Remove(root, "src", true)
		calls["RENAME of nothing"] = c.Rename(root, "no-such-file", root, "x")
		calls["WRITE to a directory"] = c.Write(src, []byte("x"))
		if kind == "read-only" {
			_, calls["CREATE on a read-only export"] = c.Create(root, "new", false)
		}
		for name, err := range calls {
			if err == nil {
				t.Errorf("%s, %s: succeeded", kind, name)
			} else if errors.Is(err, macmodel.ErrBadRPC) || macmodel.Status(err) == 0 {
				t.Errorf("%s, %s: %v, want a well-formed failure", kind, name, err)
			}
		}
		if err := c.Unmount(); err != nil {
			t.Error(err)
		}
	}
}
