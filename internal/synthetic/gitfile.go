package synthetic

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/gitnfs/gitnfs/vfs"
)

// GitFile is the name of the read-only file Options.GitFile serves in the
// root: git finds a worktree by it (a "gitdir: PATH" file, as a linked
// worktree's). No tree served ever holds one of its own (tree drops .git
// names); an overlay's own, made before the file was served, wins as the
// tree's own .gitnfs does.
const GitFile = ".git"

// GitFileSource is what the layer serves as .git.
type GitFileSource struct {
	// Bytes is the file's content, known up front: its attributes (a
	// listing inlines them, as a file's) cost nothing.
	Bytes []byte
	// Open, when set, is called before every READ of the file, and a READ
	// fails with its error: it makes what Bytes names, once
	// (internal/worktree: the export's admin directory and index, 0.5 s
	// on RIOT-OS). git reads .git before it opens anything it names
	// (read_gitfile_gently), while a walk of the tree (find, ls -l, a
	// build) lists and stats it and reads nothing: only git pays.
	Open func() error
}

func (f *FS) gitNode() vfs.Node {
	return vfs.Node{ID: vfs.FileIDFrom(f.base, GitFile), Path: GitFile, Type: vfs.Reg}
}

// attrGitFile: a read-only file (0444) owned as the root is, dated as it
// is, as long as the callback's bytes.
func (f *FS) attrGitFile(n vfs.Node) (vfs.Attr, error) {
	root, err := f.below.FS.Attr(f.Root())
	if err != nil {
		return vfs.Attr{}, err
	}
	b := f.gitFile.Bytes
	return vfs.Attr{Type: vfs.Reg, Mode: 0o444, Nlink: 1, UID: root.UID, GID: root.GID,
		Size: uint64(len(b)), Used: uint64(len(b)), Fsid: f.Fsid(), Fileid: n.ID, Time: root.Time}, nil
}

func (f *FS) readGitFile(p []byte, off int64) (int, error) {
	if f.gitFile.Open != nil {
		if err := f.gitFile.Open(); err != nil {
			return 0, fmt.Errorf("%s: %w", GitFile, err)
		}
	}
	b := f.gitFile.Bytes
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if off+int64(n) == int64(len(b)) {
		return n, io.EOF
	}
	return n, nil
}

// withGitFile is the root's listing l with .git after its entries, unless
// the tree has its own. Appended last, it moves no entry of l: a position
// cookie of a tree's listing names the same entry as without it, and a
// named cookie is l's own (gitCookie names .git).
func (f *FS) withGitFile(root vfs.Node, l vfs.Listing) (vfs.Listing, error) {
	if _, at, err := f.entryAt(root, GitFile); at != synthetic {
		if err != nil && !errors.Is(err, vfs.ErrNotDir) {
			return nil, err
		}
		return l, nil
	}
	g := &gitListing{Listing: l, n: l.Len(), node: f.gitNode(), f: f}
	attrs, _ := l.(vfs.AttrLister)
	seek, _ := l.(vfs.SeekListing)
	switch {
	case attrs != nil && seek != nil:
		return &gitListingAttrSeek{gitListingAttr{g, attrs}, gitListingSeek{g, seek}}, nil
	case attrs != nil:
		return &gitListingAttr{g, attrs}, nil
	case seek != nil:
		return &gitListingSeek{g, seek}, nil
	}
	return g, nil
}

// gitListing is a listing with .git as its last entry (index n). The
// abilities of the listing below (vfs.AttrLister, vfs.SeekListing) are
// kept by the types that embed it, one per combination.
type gitListing struct {
	vfs.Listing
	n    int
	node vfs.Node
	f    *FS
}

func (g *gitListing) Len() int { return g.n + 1 }

func (g *gitListing) Name(i int) string {
	if i == g.n {
		return GitFile
	}
	return g.Listing.Name(i)
}

func (g *gitListing) ID(i int) uint64 {
	if i == g.n {
		return g.node.ID
	}
	return g.Listing.ID(i)
}

func (g *gitListing) Node(i int) vfs.Node {
	if i == g.n {
		return g.node
	}
	return g.Listing.Node(i)
}

type gitListingAttr struct {
	*gitListing
	below vfs.AttrLister
}

// InlineAttr: .git is listed with its attributes, as any file (only
// symlinks and conflicted paths are listed without): they need no
// GitFileSource.Open, so a walk of the tree makes nothing.
func (g gitListingAttr) InlineAttr(i int) (vfs.Attr, bool, error) {
	if i == g.n {
		a, err := g.f.attrGitFile(g.node)
		return a, err == nil, err
	}
	return g.below.InlineAttr(i)
}

// gitCookie is .git's cookie in a listing whose cookies name entries: a
// hash of the name, as the overlay's are (overlay.nameCookie), so that it
// is no other name's cookie but by a 63-bit collision.
var gitCookie = func() uint64 {
	h := fnv.New64a()
	h.Write([]byte(GitFile))
	return max(h.Sum64()>>1, 3)
}()

type gitListingSeek struct {
	*gitListing
	below vfs.SeekListing
}

func (g gitListingSeek) Cookie(i int) uint64 {
	if i == g.n {
		return gitCookie
	}
	return g.below.Cookie(i)
}

// Seek: after .git is the end; after the listing below's last entry (or
// any cookie it places at its end) comes .git.
func (g gitListingSeek) Seek(cookie uint64) (int, bool) {
	if cookie == gitCookie {
		return g.n + 1, true
	}
	return g.below.Seek(cookie)
}

type gitListingAttrSeek struct {
	gitListingAttr
	gitListingSeek
}

// The methods both embed are the one listing's.
func (g *gitListingAttrSeek) Len() int            { return g.gitListingAttr.Len() }
func (g *gitListingAttrSeek) Name(i int) string   { return g.gitListingAttr.Name(i) }
func (g *gitListingAttrSeek) ID(i int) uint64     { return g.gitListingAttr.ID(i) }
func (g *gitListingAttrSeek) Node(i int) vfs.Node { return g.gitListingAttr.Node(i) }
