// Package tree is the git side of gitnfs: it opens a repository's object
// store with go-git, resolves revisions to immutable snapshots, and answers
// the three questions an NFS server asks of a tree — what is in this
// directory, how big is this file, and what are its bytes at this offset —
// without ever checking anything out or writing to the object store.
//
// It is the one door to the repository: objects, sizes, the config (every
// scope, config.go), alternates (open.go), the commit graph and merge
// bases (history.go) and abbreviations (abbrev.go) are all read here.
// Writing, which only `gitnfs commit` does, lives in tree/gitwrite.
//
// A Store is safe for concurrent use: go-git's storage is not, so every
// access to it is serialized inside Store, and everything above it (decoded
// listings, blob sizes, inflated blobs) is cached so that most calls never
// reach go-git at all.
package tree

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Kind is what a tree entry becomes in a checkout.
type Kind uint8

// Entry kinds, from the git mode of a tree entry.
const (
	Dir     Kind = 1 + iota // 040000
	File                    // 100644 (and the legacy 100664)
	Exec                    // 100755
	Symlink                 // 120000: the blob holds the target
	Gitlink                 // 160000: a submodule, served as an empty directory
)

func (k Kind) String() string {
	switch k {
	case Dir:
		return "dir"
	case File:
		return "file"
	case Exec:
		return "exec"
	case Symlink:
		return "symlink"
	case Gitlink:
		return "gitlink"
	}
	return "unknown"
}

// Mode is the git mode of the kind, as a tree object records it.
func (k Kind) Mode() uint32 {
	switch k {
	case Dir:
		return 0o40000
	case Exec:
		return 0o100755
	case Symlink:
		return 0o120000
	case Gitlink:
		return 0o160000
	}
	return 0o100644
}

// IsDir reports whether a checkout shows the entry as a directory.
func (k Kind) IsDir() bool { return k == Dir || k == Gitlink }

// IsBlob reports whether the entry's object is a blob (its size is the
// file's length, or the symlink target's).
func (k Kind) IsBlob() bool { return k == File || k == Exec || k == Symlink }

// Entry is one name in a git tree.
type Entry struct {
	Name string
	Kind Kind
	Hash plumbing.Hash // tree for Dir, blob for File/Exec/Symlink, commit for Gitlink
}

// Snapshot is one resolved revision: immutable, so everything derived from
// it may be cached forever.
type Snapshot struct {
	Rev    string        // the revision as the user typed it
	Commit plumbing.Hash // zero when Rev named a tree directly
	Root   plumbing.Hash // the root tree
	Time   time.Time     // committer time of Commit; the Unix epoch for a bare tree
}
