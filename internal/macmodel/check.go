package macmodel

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/gitnfs/gitnfs/internal/testrepo"
)

// CheckWorkloads mounts addr with opts for each workload on a cold cache,
// walks from the mount, compares what it saw with git's own listing of
// treeish in repo (every path, and with ReadEvery every file's bytes), and
// unmounts with UMNT v1. Any error of the model fails t. It returns each
// workload's census, mount and unmount left out.
func CheckWorkloads(t testing.TB, addr string, opts Options, repo, treeish string) map[Workload]Row {
	t.Helper()
	want := testrepo.LsTree(t, repo, treeish)
	rows := map[Workload]Row{}
	for _, w := range []Workload{NamesOnly, FindTypeF, LsLR, ReadEvery} {
		c, err := Mount(addr, opts)
		if err != nil {
			t.Fatalf("%s: mount: %v", w, err)
		}
		c.StaticTree = true
		c.ResetCensus()
		r, err := c.Walk(c.Root, w)
		if err != nil {
			c.Close()
			t.Fatalf("%s of %s: %v", w, opts.Path, err)
		}
		rows[w] = RowOf(w, r, c.Census())
		// Finder's probes of a folder it opens: names not listed, so
		// LOOKUPs answered NOENT, each failure decoded as strictly as a
		// success (its directory post_op_attr included).
		for _, probe := range []string{".localized", ".hidden"} {
			if _, _, err := c.Lookup(c.Root, probe); Status(err) != ErrNoEnt {
				t.Errorf("%s: LOOKUP of %s: %v, want NOENT", w, probe, err)
			}
		}
		if err := c.Unmount(); err != nil {
			t.Errorf("%s: unmount: %v", w, err)
		}
		checkPaths(t, w, r, want, repo)
	}
	return rows
}

func checkPaths(t testing.TB, w Workload, r *WalkResult, want []testrepo.LsEntry, repo string) {
	t.Helper()
	var wantPaths []string
	for _, e := range want {
		wantPaths = append(wantPaths, e.Path)
	}
	got := append([]string(nil), r.Paths...)
	sort.Strings(got)
	sort.Strings(wantPaths)
	if strings.Join(got, "\n") != strings.Join(wantPaths, "\n") {
		t.Errorf("%s saw %d paths, git ls-tree lists %d:\n got %q\nwant %q", w, len(got), len(wantPaths), got, wantPaths)
		return
	}
	if w != ReadEvery {
		return
	}
	for _, e := range want {
		if e.Type != "blob" || e.Mode == "120000" {
			continue
		}
		data, ok := r.Files[e.Path]
		if !ok {
			t.Errorf("%s: %s not read", w, e.Path)
			continue
		}
		if !bytes.Equal(data, testrepo.CatFile(t, repo, e.ID)) {
			t.Errorf("%s: %s: %d bytes differ from git's blob %s", w, e.Path, len(data), e.ID)
		}
	}
}
