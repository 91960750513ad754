package revisions

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitfs"
	"github.com/gitnfs/gitnfs/internal/wildmatch"
	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/vfs"
)

// Filter is --revisions: which refs' revisions may be served.
type Filter struct{ patterns []string }

// ParseFilter reads --revisions: comma-separated patterns over full ref
// names, as `git for-each-ref` takes them: a pattern with *, ? or [ is a
// wildmatch in which * stops at a slash (refs/tags/* matches refs/tags/v1,
// not refs/tags/rc/v1; refs/tags/** matches both); any other pattern
// matches the ref of that name and every ref below it (refs/tags matches
// every tag). A pattern names refs by their full name (refs/...) or is
// HEAD: a short name would mean different refs as refs come and go.
func ParseFilter(spec string) (*Filter, error) {
	f := &Filter{}
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("--revisions %q: an empty pattern (patterns are comma-separated: refs/tags/*,refs/heads/main)", spec)
		case p != "HEAD" && !strings.HasPrefix(p, "refs/"):
			return nil, fmt.Errorf("--revisions: pattern %q does not name refs by their full name: write refs/heads/%s, refs/tags/%s or refs/%s (or HEAD)", p, p, p, p)
		}
		f.patterns = append(f.patterns, p)
	}
	return f, nil
}

// Match reports whether the ref named name (refs/... or HEAD) matches.
func (f *Filter) Match(name string) bool {
	for _, p := range f.patterns {
		if strings.ContainsAny(p, "*?[") {
			if wildmatch.Match(p, name, true) {
				return true
			}
			continue
		}
		if name == p || strings.HasPrefix(name, p) && (strings.HasSuffix(p, "/") || name[len(p)] == '/') {
			return true
		}
	}
	return false
}

func (f *Filter) String() string {
	if f == nil {
		return "(every revision)"
	}
	return strings.Join(f.patterns, ",")
}

// git's ref_rev_parse_rules, the order in which a short name is tried: the
// name itself, then under refs/, refs/tags/, refs/heads/, refs/remotes/
// (the sixth, refs/remotes/%s/HEAD, is left out: a remote's name is a
// directory of its refs here, see List).
var revParseRules = []string{"", "refs/", "refs/tags/", "refs/heads/", "refs/remotes/"}

// refTable is one reading of the refs: what --revisions allows, and every
// name .gitnfs/rev answers to.
type refTable struct {
	read     time.Time
	changed  time.Time // when the refs were first seen as they are now
	verifier uint64    // changes when any ref or its target does
	allowed  map[plumbing.Hash]bool
	// names are every short name that resolves to a visible ref, sorted,
	// each with the ref's target; short are the shortest name of each
	// visible ref (git's refname:short), which the top of .gitnfs/rev lists.
	names []named
	short []named
}

type named struct {
	name   string
	target plumbing.Hash
}

func newRefTable(refs []tree.Ref, allow *Filter, now time.Time) *refTable {
	t := &refTable{read: now, changed: now, allowed: map[plumbing.Hash]bool{}}
	byName := make(map[string]bool, len(refs))
	h := fnv.New64a()
	for _, r := range refs {
		byName[r.Name] = true
		h.Write([]byte(r.Name))
		h.Write(r.Target[:])
	}
	t.verifier = max(h.Sum64(), 1)
	// resolves is the ref git's rules give a short name: the first rule
	// whose ref exists.
	resolves := func(short string) string {
		for _, rule := range revParseRules {
			if byName[rule+short] {
				return rule + short
			}
		}
		return ""
	}
	for _, r := range refs {
		if allow != nil && !allow.Match(r.Name) {
			continue
		}
		t.allowed[r.Target] = true
		shortest := ""
		for _, rule := range revParseRules {
			short, ok := strings.CutPrefix(r.Name, rule)
			if !ok || short == "" || resolves(short) != r.Name {
				continue
			}
			t.names = append(t.names, named{short, r.Target})
			shortest = short
		}
		if shortest != "" {
			t.short = append(t.short, named{shortest, r.Target})
		}
	}
	slices.SortFunc(t.names, func(a, b named) int { return strings.Compare(a.name, b.name) })
	slices.SortFunc(t.short, func(a, b named) int { return strings.Compare(a.name, b.name) })
	return t
}

// list is vfs.Revisions.List. Below a prefix it lists every name that
// resolves (heads/main and refs/heads/main as well as main); at the top
// only each ref's shortest name, so that ls .gitnfs/rev shows main, v1.0
// and origin/ rather than every spelling of them (refs/, heads/, tags/ and
// remotes/ still answer a LOOKUP).
func (t *refTable) list(prefix string) ([]vfs.RevEntry, bool) {
	names := t.names
	if prefix == "" {
		names = t.short
	}
	p := prefix
	if p != "" {
		p += "/"
	}
	i := sort.Search(len(names), func(i int) bool { return names[i].name >= p })
	var out []vfs.RevEntry
	at := map[string]int{}
	for ; i < len(names) && strings.HasPrefix(names[i].name, p); i++ {
		rest := names[i].name[len(p):]
		comp, _, below := strings.Cut(rest, "/")
		// "origin" (a tag) sorts apart from "origin/main" ("origin-x"
		// between them): one entry, a directory if either says so.
		if j, ok := at[comp]; ok {
			if below {
				out[j] = vfs.RevEntry{Name: comp, Dir: true}
			}
			continue
		}
		e := vfs.RevEntry{Name: comp, Dir: below || t.isDir(p+comp)}
		if !e.Dir {
			e.ID = gitfs.RevisionRootID(names[i].target)
		}
		at[comp] = len(out)
		out = append(out, e)
	}
	return out, prefix == "" || len(out) > 0 || t.isDir(prefix)
}

// isDir: some name continues below name.
func (t *refTable) isDir(name string) bool {
	p := name + "/"
	i := sort.Search(len(t.names), func(i int) bool { return t.names[i].name >= p })
	return i < len(t.names) && strings.HasPrefix(t.names[i].name, p)
}
