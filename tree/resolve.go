package tree

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Resolve turns a revision into a snapshot.
//
// Supported: a ref as git spells it (HEAD, @, main, heads/main, tags/v1,
// origin/main, refs/...), a full or unique short (>= 4 hex digits) id of
// a commit, tag or tree, followed by any of ~N, ^N, ^{}, ^{commit},
// ^{tree}, ^{tag}, ^{object}. Unlike go-git's ResolveRevision it accepts
// trees (a raw tree id, a tag of a tree, rev^{tree}), refuses ambiguous
// short ids, and prefers refs over short ids as git does.
func (s *Store) Resolve(rev string) (*Snapshot, error) {
	snap, err := s.resolve(rev)
	if err != nil {
		return nil, fmt.Errorf("resolve %q in %s: %w", rev, s.path, err)
	}
	return snap, nil
}

type revOp struct {
	kind byte   // '~', '^' or '{'
	n    int    // for ~ and ^
	typ  string // for ^{...}
}

func (s *Store) resolve(rev string) (*Snapshot, error) {
	base, ops, err := parseRev(rev)
	if err != nil {
		return nil, err
	}
	h, err := s.resolveBase(base)
	if err != nil {
		return nil, err
	}
	o, err := s.load(h)
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		if o, err = s.apply(o, op); err != nil {
			return nil, err
		}
	}
	if o, err = s.peelTags(o); err != nil {
		return nil, err
	}
	snap := &Snapshot{Rev: rev}
	switch o.typ {
	case plumbing.CommitObject:
		snap.Commit, snap.Root, snap.Time = o.hash, o.commit.TreeHash, o.commit.Committer.When
	case plumbing.TreeObject:
		snap.Root, snap.Time = o.hash, time.Unix(0, 0)
	default:
		return nil, wrongType(o.hash, o.typ, "a commit or tree")
	}
	return snap, nil
}

// parseRev splits "base" from its suffix operators. Ref names cannot hold
// '~' or '^', so the base ends at the first of them.
func parseRev(rev string) (string, []revOp, error) {
	i := strings.IndexAny(rev, "~^")
	if i < 0 {
		i = len(rev)
	}
	base, rest := rev[:i], rev[i:]
	switch {
	case base == "":
		return "", nil, fmt.Errorf("%w: missing revision before %q", ErrBadRevision, rest)
	case strings.Contains(base, ":"):
		return "", nil, fmt.Errorf("%w: rev:path is not supported", ErrBadRevision)
	case strings.Contains(base, "@{"):
		return "", nil, fmt.Errorf("%w: reflog and upstream (@{...}) are not supported", ErrBadRevision)
	}
	var ops []revOp
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == '^' && strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", nil, fmt.Errorf("%w: unterminated ^{", ErrBadRevision)
			}
			typ := rest[1:end]
			rest = rest[end+1:]
			switch typ {
			case "", "commit", "tree", "tag", "object":
			default:
				return "", nil, fmt.Errorf("%w: ^{%s} is not supported", ErrBadRevision, typ)
			}
			ops = append(ops, revOp{kind: '{', typ: typ})
			continue
		}
		if c != '~' && c != '^' {
			return "", nil, fmt.Errorf("%w: unexpected %q", ErrBadRevision, c)
		}
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n := 1
		if j > 0 {
			v, err := strconv.ParseInt(rest[:j], 10, 32)
			if err != nil {
				return "", nil, fmt.Errorf("%w: %q: %v", ErrBadRevision, rest[:j], err)
			}
			n = int(v)
		}
		rest = rest[j:]
		ops = append(ops, revOp{kind: c, n: n})
	}
	return base, ops, nil
}

// resolveBase finds the object a revision's base names, in git's order: a
// full id, then refs (via git's rev-parse rules), then a short id.
func (s *Store) resolveBase(base string) (plumbing.Hash, error) {
	if base == "@" {
		base = "HEAD"
	}
	hexLike := isHex(base)
	if hexLike && len(base) == 40 {
		h := plumbing.NewHash(base)
		if _, err := s.objectType(h); err == nil {
			return h, nil
		}
	}
	if validRefName(base) {
		h, err := s.resolveRef(base)
		if err != nil || !h.IsZero() {
			return h, err
		}
	}
	if hexLike && len(base) >= 4 && len(base) < 40 {
		hs, err := s.hashesWithPrefix(base)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch len(hs) {
		case 0:
		case 1:
			return hs[0], nil
		default:
			return plumbing.ZeroHash, s.ambiguous(base, hs)
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("unknown revision (tried ref, tag, remote branch, hash): %w", ErrNotFound)
}

func (s *Store) resolveRef(name string) (plumbing.Hash, error) {
	var h plumbing.Hash
	err := s.locked("ref "+name, func() error {
		// go-git reads a name directly in the git dir only if it is
		// HEAD-like (HEAD, ORIG_HEAD, ...): "config" is not a ref.
		for _, rule := range plumbing.RefRevParseRules {
			ref, err := storer.ResolveReference(s.refs, plumbing.ReferenceName(fmt.Sprintf(rule, name)))
			if err == nil && ref.Type() == plumbing.HashReference && !ref.Hash().IsZero() {
				h = ref.Hash()
				return nil
			}
		}
		return nil
	})
	return h, err
}

func (s *Store) ambiguous(prefix string, hs []plumbing.Hash) error {
	sort.Slice(hs, func(i, j int) bool { return hs[i].String() < hs[j].String() })
	var cands []string
	for i, h := range hs {
		if i == 4 {
			cands = append(cands, "...")
			break
		}
		t, err := s.objectType(h)
		if err != nil {
			cands = append(cands, h.String())
			continue
		}
		cands = append(cands, h.String()+" "+t.String())
	}
	return fmt.Errorf("%w: %s matches %d objects (%s)", ErrAmbiguous, prefix, len(hs), strings.Join(cands, ", "))
}

// gitObject is an object met while resolving, decoded if it is a commit or tag.
type gitObject struct {
	hash   plumbing.Hash
	typ    plumbing.ObjectType
	commit *object.Commit
	tag    *object.Tag
}

func (s *Store) load(h plumbing.Hash) (*gitObject, error) {
	o := &gitObject{hash: h}
	err := s.locked("read "+h.String(), func() error {
		eo, err := s.encodedObjectLocked(h)
		if err != nil {
			return err
		}
		o.typ = eo.Type()
		switch o.typ {
		case plumbing.CommitObject:
			o.commit = new(object.Commit)
			return o.commit.Decode(eo)
		case plumbing.TagObject:
			o.tag = new(object.Tag)
			return o.tag.Decode(eo)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", h, err)
	}
	return o, nil
}

// maxPeel bounds tag chains: a tag of a tag of ... cannot loop (ids are
// content hashes) but can be long.
const maxPeel = 64

func (s *Store) peelTags(o *gitObject) (*gitObject, error) {
	for i := 0; o.typ == plumbing.TagObject; i++ {
		if i == maxPeel {
			return nil, fmt.Errorf("tag %s: tag chain too long", o.hash)
		}
		var err error
		if o, err = s.load(o.tag.Target); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (s *Store) peelCommit(o *gitObject) (*gitObject, error) {
	o, err := s.peelTags(o)
	if err != nil {
		return nil, err
	}
	if o.typ != plumbing.CommitObject {
		return nil, wrongType(o.hash, o.typ, "a commit")
	}
	return o, nil
}

func (s *Store) apply(o *gitObject, op revOp) (*gitObject, error) {
	switch op.kind {
	case '{':
		switch op.typ {
		case "":
			return s.peelTags(o)
		case "object":
			return o, nil
		case "tag":
			if o.typ != plumbing.TagObject {
				return nil, wrongType(o.hash, o.typ, "a tag")
			}
			return o, nil
		case "commit":
			return s.peelCommit(o)
		case "tree":
			o, err := s.peelTags(o)
			if err != nil {
				return nil, err
			}
			switch o.typ {
			case plumbing.TreeObject:
				return o, nil
			case plumbing.CommitObject:
				return s.load(o.commit.TreeHash)
			}
			return nil, wrongType(o.hash, o.typ, "a tree-ish")
		}
	case '^':
		c, err := s.peelCommit(o)
		if err != nil || op.n == 0 {
			return c, err
		}
		if op.n > len(c.commit.ParentHashes) {
			return nil, fmt.Errorf("commit %s has no parent %d: %w", c.hash, op.n, ErrNotFound)
		}
		return s.parent(c.commit.ParentHashes[op.n-1])
	case '~':
		c, err := s.peelCommit(o)
		for i := 0; err == nil && i < op.n; i++ {
			if len(c.commit.ParentHashes) == 0 {
				return nil, fmt.Errorf("commit %s has no parent (%d generations short): %w", c.hash, op.n-i, ErrNotFound)
			}
			c, err = s.parent(c.commit.ParentHashes[0])
		}
		return c, err
	}
	return nil, fmt.Errorf("%w: bad operator", ErrBadRevision)
}

func (s *Store) parent(h plumbing.Hash) (*gitObject, error) {
	o, err := s.load(h)
	if err != nil {
		return nil, err
	}
	if o.typ != plumbing.CommitObject {
		return nil, fmt.Errorf("parent %w", wrongType(h, o.typ, "a commit"))
	}
	return o, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// validRefName applies git check-ref-format's rules loosely, so that no
// user input becomes a path outside the refs we mean to read.
func validRefName(name string) bool {
	if name == "" || name == "@" || name[0] == '/' || name[0] == '-' ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") ||
		strings.HasSuffix(name, ".lock") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{") {
		return false
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	return true
}

// ErrWrongType is returned (wrapped) by Resolve when a revision names an
// object of a type it cannot serve or apply an operator to: a blob, or a
// tree where a commit is needed (v1^{tree}~1).
var ErrWrongType = errors.New("wrong object type")

type wrongTypeError struct {
	id        plumbing.Hash
	typ       plumbing.ObjectType
	wantedOne string
}

func wrongType(id plumbing.Hash, typ plumbing.ObjectType, want string) error {
	return &wrongTypeError{id, typ, want}
}

func (e *wrongTypeError) Error() string {
	return fmt.Sprintf("%s is a %s, not %s", e.id, e.typ, e.wantedOne)
}

func (e *wrongTypeError) Is(target error) bool { return target == ErrWrongType }
