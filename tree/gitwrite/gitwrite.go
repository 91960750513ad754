// Package gitwrite is the one place gitnfs writes to a repository: blobs,
// trees and commits into its object store, and the move of a branch. Only
// `gitnfs commit` uses it; serving never does (the read side, package
// tree, has no way to write). It speaks git (entries, modes, hashes,
// readers) and knows nothing of NFS or overlays.
package gitwrite

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/gitnfs/gitnfs/tree"
)

// Writer writes into the object store of one repository.
type Writer struct {
	store *tree.Store         // what is stored already, alternates included
	st    *filesystem.Storage // go-git's storage, only ever written through
}

// Open prepares writing into the repository store reads. The store stays
// the caller's: Close does not close it.
func Open(store *tree.Store) (*Writer, error) {
	dir := store.GitDir()
	if dir == "" {
		return nil, errors.New("write objects: the repository is not on disk")
	}
	// go-git's own object cache only serves reads, which go through store.
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(cache.MiByte))
	return &Writer{store: store, st: st}, nil
}

// Close releases the storage's descriptors.
func (w *Writer) Close() error { return w.st.Close() }

// HasEncodedObject answers as go-git's storers do: nil when the object
// store (the repository's or an alternate) holds h,
// plumbing.ErrObjectNotFound when it does not. An object only in the
// reading store's memory (a merge's virtual blob) is not stored.
func (w *Writer) HasEncodedObject(h plumbing.Hash) error {
	ok, err := w.store.Stored(h)
	switch {
	case err != nil:
		return err
	case !ok:
		return plumbing.ErrObjectNotFound
	}
	return nil
}

// put stores obj unless the store has it already, as git does (an
// object is immutable: writing it again changes nothing).
func (w *Writer) put(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if err := w.HasEncodedObject(h); err == nil {
		return h, nil
	} else if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.ZeroHash, err
	}
	if _, err := w.st.SetEncodedObject(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write %s %s: %w", obj.Type(), h, err)
	}
	return h, nil
}

// object encodes typ with content from r, which must hold exactly size
// bytes (a short reader is an error, never a short object).
func (w *Writer) object(typ plumbing.ObjectType, r io.Reader, size int64) (plumbing.Hash, error) {
	if size < 0 {
		return plumbing.ZeroHash, fmt.Errorf("%s of negative size %d", typ, size)
	}
	obj := w.st.NewEncodedObject()
	obj.SetType(typ)
	obj.SetSize(size)
	ow, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if n, err := io.CopyN(ow, r, size); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: %d of %d bytes", io.ErrUnexpectedEOF, n, size)
		}
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", typ, err)
	}
	if err := ow.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return w.put(obj)
}

// Blob writes the size bytes r yields as a blob and returns its id.
func (w *Writer) Blob(r io.Reader, size int64) (plumbing.Hash, error) {
	return w.object(plumbing.BlobObject, r, size)
}

// Tree writes a tree of entries (in any order; git's order is made here)
// and returns its id. A name git refuses in a tree (empty, with '/' or
// NUL, repeated, ".", ".." or any case of ".git") is an error.
func (w *Writer) Tree(entries []tree.Entry) (plumbing.Hash, error) {
	for _, e := range entries {
		if e.Name == "." || e.Name == ".." || strings.EqualFold(e.Name, ".git") {
			return plumbing.ZeroHash, fmt.Errorf("write tree: git refuses an entry named %q", e.Name)
		}
	}
	data, err := tree.EncodeTree(entries)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write tree: %w", err)
	}
	return w.object(plumbing.TreeObject, strings.NewReader(string(data)), int64(len(data)))
}

// Commit is a commit to write.
type Commit struct {
	Tree              plumbing.Hash
	Parents           []plumbing.Hash
	Author, Committer object.Signature
	// Message is written as given (git commit-tree does not add a final
	// newline either).
	Message string
}

// Commit writes c and returns its id.
func (w *Writer) Commit(c Commit) (plumbing.Hash, error) {
	if c.Tree.IsZero() {
		return plumbing.ZeroHash, errors.New("write commit: no tree")
	}
	for _, s := range []object.Signature{c.Author, c.Committer} {
		if strings.ContainsAny(s.Name, "<>\n") || strings.ContainsAny(s.Email, "<>\n") {
			return plumbing.ZeroHash, fmt.Errorf("write commit: identity %q <%s> holds '<', '>' or a newline", s.Name, s.Email)
		}
	}
	gc := &object.Commit{Author: c.Author, Committer: c.Committer, Message: c.Message, TreeHash: c.Tree, ParentHashes: c.Parents}
	obj := w.st.NewEncodedObject()
	if err := gc.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write commit: %w", err)
	}
	return w.put(obj)
}

// SetBranch points refs/heads/name at id: it creates the branch, or moves
// it from from (a fast-forward the caller vouches for) and from nowhere
// else, so a branch someone else moved meanwhile is left alone.
func (w *Writer) SetBranch(name string, id, from plumbing.Hash) error {
	ref := plumbing.NewBranchReferenceName(name)
	if err := ref.Validate(); err != nil {
		return fmt.Errorf("branch %q: %w", name, err)
	}
	old, err := w.st.Reference(ref)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		old = nil
	case err != nil:
		return err
	case old.Hash() != from:
		return fmt.Errorf("branch %s is at %s, not at %s: not moving it", name, short12(old.Hash().String()), short12(from.String()))
	}
	return w.st.CheckAndSetReference(plumbing.NewHashReference(ref, id), old)
}

func short12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
