package gitattr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
)

// NewCheckout returns the attributes a checkout of root has in the
// repository of store: root's .gitattributes along each path, then
// $GIT_DIR/info/attributes (none when the store has no directory) and the
// merge drivers of the repository's config (tree.Store.Config). Nothing is read before the
// first Merge.
func NewCheckout(store *tree.Store, root plumbing.Hash) *Checkout {
	s := &Checkout{store: store, root: root}
	if id := store.ID(); id != "" {
		s.gitDir = filepath.Dir(id) // the common git directory, which holds info/ and config
	}
	return s
}

// isRegular is whether a .gitattributes entry is read: a symlink or a
// submodule is not (git does not follow in-tree symlinks either).
func isRegular(k tree.Kind) bool { return k == tree.File || k == tree.Exec }

// Checkout is one merge's attribute machinery: the OURS tree, the
// repository's info/attributes and merge configuration (read once, on the
// first content merge), parsed .gitattributes by blob id, and the
// attribute files on the way to each directory seen.
type Checkout struct {
	store  *tree.Store
	root   plumbing.Hash // OURS's root tree
	gitDir string        // "" when the store has no directory

	ready  atomic.Bool
	initMu sync.Mutex
	// Fixed once ready:
	slots      map[string]int // attribute name -> slot: merge, conflict-marker-size, then macros
	macros     [][]attrSet    // by slot; nil for an attribute that is no macro
	info       *attrFile      // $GIT_DIR/info/attributes (nil: none)
	drivers    map[string]*Driver
	defDriver  string // merge.default
	hasDefault bool

	mu    sync.RWMutex
	dirs  map[string]*attrDir         // directory path ("" the root) -> its files
	files map[plumbing.Hash]*attrFile // non-root .gitattributes by blob id
	bad   map[plumbing.Hash]error     // those over the size limit
}

const (
	slotMerge = iota
	slotMarker
)

// attrDir is what applies in one directory: the attribute files from the
// root down to it (only those with lines that matter), and its OURS tree.
type attrDir struct {
	tree    plumbing.Hash // zero when OURS has no directory there
	listing weak.Pointer[tree.Listing]
	frames  []attrFrame
}

// listingOf is d's OURS listing: the one it was computed from while the
// store still caches it (so a child costs one listing, its own), else the
// store's.
func (s *Checkout) listingOf(d *attrDir) (*tree.Listing, error) {
	if l := d.listing.Value(); l != nil {
		return l, nil
	}
	return s.store.Listing(d.tree)
}

type attrFrame struct {
	file *attrFile
	base string // the directory of the .gitattributes ("" the root)
}

// attrFile is a parsed attributes file, reduced to the lines that set an
// attribute that matters (merge, conflict-marker-size, a macro).
type attrFile struct {
	lines []attrLine
}

type attrLine struct {
	pat    attrPattern
	states []attrSet
}

type attrSet struct {
	slot int
	v    attrValue
}

// attrValue is an attribute's state: unknown (not decided yet), set,
// unset (-attr), unspecified (!attr) or a value.
type attrValue struct {
	k uint8
	s string
}

const (
	avUnknown uint8 = iota
	avTrue
	avFalse
	avUnspecified
	avString
)

// init reads info/attributes, the root .gitattributes and the config once
// (again after a failure).
func (s *Checkout) init() error {
	if s.ready.Load() {
		return nil
	}
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.ready.Load() {
		return nil
	}
	var infoRaw, rootRaw []rawAttrLine
	if s.gitDir != "" {
		name := filepath.Join(s.gitDir, "info", "attributes")
		data, err := readAttrFile(name)
		if err != nil {
			return err
		}
		infoRaw = parseAttrs(data, true)
		if s.drivers, s.defDriver, s.hasDefault, err = mergeConfig(s.store); err != nil {
			return err
		}
	}
	root := &attrDir{tree: s.root}
	if !s.root.IsZero() {
		l, err := s.store.Listing(s.root)
		if err != nil {
			return fmt.Errorf("merge attributes: root tree %s: %w", s.root, err)
		}
		root.listing = weak.Make(l)
		if e, ok := l.Lookup(".gitattributes"); ok && isRegular(e.Kind) {
			data, err := s.readBlob(e.Hash, ".gitattributes")
			if err != nil {
				return err
			}
			rootRaw = parseAttrs(data, true)
		}
	}

	// The attributes that can matter: merge, conflict-marker-size, and
	// every macro (its expansion may set them). The macro definition that
	// wins is the one nearest the top: info/attributes, its last line
	// first, then the root .gitattributes, then the built-in binary.
	s.slots = map[string]int{"merge": slotMerge, "conflict-marker-size": slotMarker}
	defs := map[string][]rawAttrSet{}
	for _, raw := range [][]rawAttrLine{infoRaw, rootRaw, builtinAttrs} {
		for i := len(raw) - 1; i >= 0; i-- {
			if m := raw[i].macro; m != "" {
				if _, ok := defs[m]; !ok {
					defs[m] = raw[i].states
				}
				if _, ok := s.slots[m]; !ok {
					s.slots[m] = len(s.slots)
				}
			}
		}
	}
	s.macros = make([][]attrSet, len(s.slots))
	for name, states := range defs {
		s.macros[s.slots[name]] = s.compileStates(states)
	}
	if len(infoRaw) > 0 {
		if f := s.compile(infoRaw); len(f.lines) > 0 {
			s.info = f
		}
	}
	if len(rootRaw) > 0 {
		if f := s.compile(rootRaw); len(f.lines) > 0 {
			root.frames = []attrFrame{{file: f}}
		}
	}
	s.dirs = map[string]*attrDir{"": root}
	s.files = map[plumbing.Hash]*attrFile{}
	s.bad = map[plumbing.Hash]error{}
	s.ready.Store(true)
	return nil
}

// builtinAttrs is git's built-in attribute file.
var builtinAttrs = parseAttrs([]byte("[attr]binary -diff -merge -text\n"), true)

// readAttrFile reads an attributes file of the file system: none is fine.
func readAttrFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("merge attributes: %s is over the %d bytes gitnfs reads", name, MaxFileSize)
	}
	return data, nil
}

// readBlob reads a .gitattributes blob (at path, for messages).
func (s *Checkout) readBlob(h plumbing.Hash, path string) ([]byte, error) {
	size, err := s.store.BlobSize(h)
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %s (blob %s): %w", path, h, err)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("merge attributes: %s (blob %s) is %d bytes, over the %d gitnfs reads", path, h, size, MaxFileSize)
	}
	data, err := s.store.ReadBlob(h)
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %s (blob %s): %w", path, h, err)
	}
	return data, nil
}

// Merge returns the merge attributes of path (git_check_attr for merge
// and conflict-marker-size, then find_ll_merge_driver).
func (s *Checkout) Merge(path string) (Merge, error) {
	merge, marker, some, err := s.values(path)
	if err != nil || !some {
		return Merge{}, err
	}
	return s.decide(merge, marker, path)
}

// values returns path's merge and conflict-marker-size attributes; some is
// false when nothing can change its merge (no attribute file on the way
// sets them, and merge.default is unset).
func (s *Checkout) values(path string) (merge, marker attrValue, some bool, err error) {
	if err := s.init(); err != nil {
		return merge, marker, false, err
	}
	slash := strings.LastIndexByte(path, '/')
	dir := ""
	if slash >= 0 {
		dir = path[:slash]
	}
	d, err := s.dir(dir)
	if err != nil {
		return merge, marker, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(d.frames) == 0 && s.info == nil && !s.hasDefault {
		return merge, marker, false, nil
	}
	var buf [16]attrValue
	r := resolver{macros: s.macros}
	if len(s.macros) <= len(buf) {
		r.vals = buf[:len(s.macros)]
	} else {
		r.vals = make([]attrValue, len(s.macros))
	}
	base := path[slash+1:]
	if s.info != nil {
		r.file(s.info, path, base, "")
	}
	for i := len(d.frames) - 1; i >= 0 && !r.done(); i-- {
		r.file(d.frames[i].file, path, base, d.frames[i].base)
	}
	return r.vals[slotMerge], r.vals[slotMarker], true, nil
}

// decide is find_ll_merge_driver plus the marker size.
func (s *Checkout) decide(merge, marker attrValue, path string) (Merge, error) {
	var a Merge
	if marker.k == avString {
		if n := cAtoi(marker.s); n > 0 && n != 7 {
			if n > maxMarkerSize {
				return Merge{}, fmt.Errorf("%s: conflict-marker-size=%s is over the %d gitnfs writes", path, marker.s, maxMarkerSize)
			}
			a.Marker = n
		}
	}
	var name string
	switch merge.k {
	case avTrue:
		return a, nil
	case avFalse:
		return Merge{Kind: Binary}, nil // no markers: the size does not matter
	case avString:
		name = merge.s
	default:
		if !s.hasDefault {
			return a, nil
		}
		name = s.defDriver
	}
	if d := s.drivers[name]; d != nil {
		a.Kind, a.Driver = External, d
		return a, nil
	}
	switch name {
	case "binary":
		return Merge{Kind: Binary}, nil
	case "union":
		return Merge{Kind: Union}, nil
	}
	return a, nil // "text", or an unknown name: git falls back to the text merge
}

// resolver fills attribute values as git's fill/fill_one do: from the
// highest-precedence file down, each file's lines last first, the first
// value an attribute gets is its value, and a macro set to true expands
// into the attributes still undecided.
type resolver struct {
	vals   []attrValue
	macros [][]attrSet
}

func (r *resolver) done() bool {
	return r.vals[slotMerge].k != avUnknown && r.vals[slotMarker].k != avUnknown
}

func (r *resolver) file(f *attrFile, path, base, dir string) {
	for i := len(f.lines) - 1; i >= 0 && !r.done(); i-- {
		if f.lines[i].pat.match(path, base, dir) {
			r.fill(f.lines[i].states)
		}
	}
}

func (r *resolver) fill(states []attrSet) {
	for i := len(states) - 1; i >= 0; i-- {
		st := states[i]
		if r.vals[st.slot].k != avUnknown {
			continue
		}
		r.vals[st.slot] = st.v
		if st.v.k == avTrue && r.macros[st.slot] != nil {
			r.fill(r.macros[st.slot])
		}
	}
}

// dir returns what applies in the directory dir, computing it (and its
// parents) on first use.
func (s *Checkout) dir(dir string) (*attrDir, error) {
	s.mu.RLock()
	d := s.dirs[dir]
	s.mu.RUnlock()
	if d != nil {
		return d, nil
	}
	parentPath, name := "", dir
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		parentPath, name = dir[:i], dir[i+1:]
	}
	parent, err := s.dir(parentPath)
	if err != nil {
		return nil, err
	}
	d = &attrDir{frames: parent.frames}
	if !parent.tree.IsZero() {
		l, err := s.listingOf(parent)
		if err != nil {
			return nil, fmt.Errorf("merge attributes: tree of %q: %w", parentPath, err)
		}
		if e, ok := l.Lookup(name); ok && e.Kind == tree.Dir {
			d.tree = e.Hash
		}
	}
	if !d.tree.IsZero() {
		l, err := s.store.Listing(d.tree)
		if err != nil {
			return nil, fmt.Errorf("merge attributes: tree of %q: %w", dir, err)
		}
		d.listing = weak.Make(l)
		if e, ok := l.Lookup(".gitattributes"); ok && isRegular(e.Kind) {
			f, err := s.file(e.Hash, dir+"/.gitattributes")
			if err != nil {
				return nil, err
			}
			if len(f.lines) > 0 {
				d.frames = append(parent.frames[:len(parent.frames):len(parent.frames)], attrFrame{file: f, base: dir})
			}
		}
	}
	s.mu.Lock()
	if have := s.dirs[dir]; have != nil {
		d = have
	} else {
		s.dirs[dir] = d
	}
	s.mu.Unlock()
	return d, nil
}

// file returns a non-root .gitattributes, parsed once per blob.
func (s *Checkout) file(h plumbing.Hash, path string) (*attrFile, error) {
	s.mu.RLock()
	f, bad := s.files[h], s.bad[h]
	s.mu.RUnlock()
	if f != nil || bad != nil {
		return f, bad
	}
	data, err := s.readBlob(h, path)
	if err != nil {
		if size, serr := s.store.BlobSize(h); serr == nil && size > MaxFileSize {
			s.mu.Lock()
			s.bad[h] = err // a property of the blob: fail the same way, cheaply
			s.mu.Unlock()
		}
		return nil, err
	}
	f = s.compile(parseAttrs(data, false))
	s.mu.Lock()
	s.files[h] = f
	s.mu.Unlock()
	return f, nil
}

// compile keeps the lines of raw that set an attribute that matters.
func (s *Checkout) compile(raw []rawAttrLine) *attrFile {
	f := &attrFile{}
	for _, l := range raw {
		if l.macro != "" {
			continue
		}
		if states := s.compileStates(l.states); len(states) > 0 {
			f.lines = append(f.lines, attrLine{pat: l.pat, states: states})
		}
	}
	return f
}

func (s *Checkout) compileStates(raw []rawAttrSet) []attrSet {
	var out []attrSet
	for _, st := range raw {
		if slot, ok := s.slots[st.name]; ok {
			out = append(out, attrSet{slot: slot, v: st.v})
		}
	}
	return out
}
