package tree

import (
	"errors"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Ref is a ref and what it names.
type Ref struct {
	Name string // "HEAD", "refs/heads/main", "refs/tags/v1.0"
	// Target is the commit or tree the ref names, annotated tags peeled:
	// what Resolve(Name) serves.
	Target plumbing.Hash
}

// Refs lists HEAD and every ref under refs/ (loose and packed, as git reads
// them), sorted by name, symbolic refs followed and tags peeled. A ref that
// names a blob, a dangling symbolic ref and a ref whose object is missing
// are left out: none of them is a revision that could be served.
//
// Peeling an annotated tag reads it (a few hundred bytes); a tag's target
// never changes, so each tag is read once per store (RIOT's 219 tags: the
// first listing reads them, later ones only the refs).
func (s *Store) Refs() ([]Ref, error) {
	var raw []*plumbing.Reference
	err := s.locked("list refs", func() error {
		iter, err := s.refs.IterReferences()
		if err != nil {
			return err
		}
		defer iter.Close()
		err = iter.ForEach(func(r *plumbing.Reference) error {
			name := r.Name().String()
			if name != "HEAD" && !strings.HasPrefix(name, "refs/") {
				return nil
			}
			if r.Type() == plumbing.SymbolicReference {
				target, err := storer.ResolveReference(s.refs, r.Name())
				if err != nil {
					return nil // dangling: nothing to serve
				}
				r = plumbing.NewHashReference(r.Name(), target.Hash())
			}
			raw = append(raw, r)
			return nil
		})
		if err != nil {
			return err
		}
		// go-git's iterator leaves HEAD out of a bare repository's refs.
		if !slices.ContainsFunc(raw, func(r *plumbing.Reference) bool { return r.Name() == plumbing.HEAD }) {
			if head, err := storer.ResolveReference(s.refs, plumbing.HEAD); err == nil {
				raw = append(raw, plumbing.NewHashReference(plumbing.HEAD, head.Hash()))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	refs := make([]Ref, 0, len(raw))
	for _, r := range raw {
		target, ok, err := s.peeled(r.Hash())
		if err != nil {
			return nil, err
		}
		if ok {
			refs = append(refs, Ref{Name: r.Name().String(), Target: target})
		}
	}
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(refs, func(a, b Ref) bool { return a.Name == b.Name }), nil
}

// peeled is the commit or tree h names, tags peeled; ok is false for a blob
// or a missing object (an error only for an object that cannot be read).
func (s *Store) peeled(h plumbing.Hash) (plumbing.Hash, bool, error) {
	t, err := s.objectType(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	switch t {
	case plumbing.CommitObject, plumbing.TreeObject:
		return h, true, nil
	case plumbing.TagObject:
	default:
		return plumbing.ZeroHash, false, nil
	}
	s.peelsMu.Lock()
	p, ok := s.peels[h]
	s.peelsMu.Unlock()
	if ok {
		return p, !p.IsZero(), nil
	}
	o, err := s.load(h)
	if err == nil {
		o, err = s.peelTags(o)
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) || errors.Is(err, ErrNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	if o.typ == plumbing.CommitObject || o.typ == plumbing.TreeObject {
		p = o.hash
	}
	s.peelsMu.Lock()
	if s.peels == nil {
		s.peels = map[plumbing.Hash]plumbing.Hash{}
	}
	s.peels[h] = p
	s.peelsMu.Unlock()
	return p, !p.IsZero(), nil
}
