package mergefs

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"weak"

	"github.com/go-git/go-git/v5/plumbing"
	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// Merge attributes: what .gitattributes and the repository's config make of
// a content merge (a cfile with merge set), as git 2.39's ll_merge does.
//
//   - merge unset (-merge, or the built-in "binary" macro): ours is left,
//     conflicted (ll_binary_merge). merge=binary too, unless a driver of
//     that name is configured.
//   - merge set, unspecified, merge=text, or merge=NAME with no
//     merge.NAME.* in the config: the normal text merge. merge.default
//     names the driver of a path with no merge attribute, as in git.
//   - merge=union: merge3 with FavorUnion (never conflicted, unless a side
//     is binary: then binary, as in git).
//   - merge=NAME with merge.NAME.* configured (a configured name wins over
//     the built-in ones, as in git): merge.NAME.driver runs through /bin/sh
//     with %O %A %B (temporary files named .merge_file_XXXXXX, relative to
//     its working directory, a private temporary directory), %L (the marker
//     size), %P (the path, shell-quoted) and %% (git 2.39 has no %S %X %Y:
//     they stay as typed). Exit status 0 is clean, anything else conflicted
//     (a signal too); the result is %A's content afterwards. It is killed
//     (its whole process group) after driverTimeout, which is an error, as
//     is a driver that cannot start, leaves no %A, or has no driver line.
//   - conflict-marker-size=N: the length of conflict markers (atoi; 0 or
//     less is the default, 7).
//
// Which attributes: those `git merge` would see in a checkout of OURS (the
// view serves an object store, so there is no work tree to read): the
// .gitattributes blobs of the OURS tree along the path (root first, deeper
// ones override), then $GIT_DIR/info/attributes over them all, with the
// built-in "[attr]binary -diff -merge -text" below, and [attr] macros from
// the root .gitattributes and info/attributes. Global and system attribute
// files (core.attributesFile, $XDG_CONFIG_HOME/git/attributes,
// /etc/gitattributes) are not read, nor are global or system config files:
// drivers and merge.default come from $GIT_DIR/config alone (include.path
// not followed). Matching is case-sensitive (core.ignoreCase is ignored).
// A .gitattributes that is a symlink or a submodule is not read (git does
// not follow in-tree symlinks either).
//
// Errors: a .gitattributes or info/attributes above maxAttrFileSize bytes
// (git reads up to 100 MiB), or one that cannot be read, or an unparsable
// config, makes every content merge whose attributes depend on it fail
// with an error naming the file, every time (never cached as "no
// attributes": serving bytes git would not write is worse than an I/O
// error on the few paths concerned). Lines git warns about and skips
// (negative patterns, [attr] outside the root, invalid names, lines of 2048
// bytes or more) are skipped silently.
//
// info/attributes and the config are read once per view, on its first
// content merge (like the trees, they are a snapshot).
//
// Cost: a path that is not a content merge never looks at attributes. A
// content merge looks up its directory in a per-view map; the first time a
// directory is seen, its OURS tree is listed (one listing lookup: the
// parent's listing is kept, weakly, from when the parent was seen) to find
// its .gitattributes. With no .gitattributes on the way, no
// info/attributes and no merge.default, that is all, without allocating,
// and the cache key is the cfile's as before. Parsed files are cached per
// view by blob id, keeping only the lines that can change a merge.

const (
	// maxAttrFileSize bounds an attributes file gitnfs reads.
	maxAttrFileSize = 100 << 10
	// attrMaxLineLength is git's ATTR_MAX_LINE_LENGTH: longer lines are
	// ignored.
	attrMaxLineLength = 2048
	// maxMarkerSize bounds conflict-marker-size (git has no bound; a
	// bigger value is refused rather than written).
	maxMarkerSize = 1 << 20
	// maxDriverResult bounds what a merge driver may leave in %A.
	maxDriverResult = maxXdiffSize
)

// driverTimeout is how long a merge driver may run before it is killed.
var driverTimeout = 60 * time.Second

// driverKind is the low-level merge a path's attributes select.
type driverKind uint8

const (
	drvText     driverKind = iota // the normal content merge (the zero value)
	drvBinary                     // ours left, conflicted
	drvUnion                      // both sides' lines, never conflicted
	drvExternal                   // a configured merge.NAME.driver
)

// mergeAttr is what the attributes decide for one content merge; the zero
// value is the merge without attributes.
type mergeAttr struct {
	kind   driverKind
	marker int          // conflict-marker-size; 0 is git's default (7)
	drv    *mergeDriver // for drvExternal
}

// markerSize is the effective conflict-marker length.
func (a mergeAttr) markerSize() int {
	if a.marker > 0 {
		return a.marker
	}
	return 7
}

// mergeDriver is one [merge "NAME"] section of the config.
type mergeDriver struct {
	name    string
	cmdline string
	hasCmd  bool
}

// keyFor is the cache key of c's outcome at path under a: c's own key when
// the attributes change nothing, else a key that also holds the driver and
// the marker size (and, for a driver, which sees %P, the path).
func (a mergeAttr) keyFor(c *cfile, path string) [20]byte {
	if a == (mergeAttr{}) {
		return c.key
	}
	h := sha1.New()
	h.Write([]byte("gitnfs merge attributes\x00"))
	h.Write(c.key[:])
	var buf [5]byte
	buf[0] = byte(a.kind)
	binary.BigEndian.PutUint32(buf[1:], uint32(a.marker))
	h.Write(buf[:])
	if a.drv != nil {
		fmt.Fprintf(h, "%s\x00%s\x00%s", a.drv.name, a.drv.cmdline, path)
	}
	var k [20]byte
	copy(k[:], h.Sum(nil))
	return k
}

// mergeAttrOf returns the attributes of c's merge at path and the key its
// outcome is cached under. A cfile that is not a content merge has none.
func (f *FS) mergeAttrOf(c *cfile, path string) (mergeAttr, [20]byte, error) {
	if !c.merge {
		return mergeAttr{}, c.key, nil
	}
	a, err := f.gitattributes().lookup(path)
	if err != nil {
		return mergeAttr{}, c.key, err
	}
	return a, a.keyFor(c, path), nil
}

// gitattributes is the view's attribute state, made on first use. The
// attributes are OURS's (what a checkout of ours would have), also for the
// inner merges of a virtual merge base (git reads the work tree's).
func (f *FS) gitattributes() *attrState {
	f.attrOnce.Do(func() {
		root := f.ours.Root
		if !f.attrRoot.IsZero() {
			root = f.attrRoot
		}
		s := &attrState{store: f.store, root: root}
		if id := f.store.ID(); id != "" {
			s.gitDir = filepath.Dir(id) // the common git directory, as in MergeBase
		}
		f.attrs2 = s
	})
	return f.attrs2
}

// attrState is one view's attribute machinery: the OURS tree, the
// repository's info/attributes and merge configuration (read once, on the
// first content merge), parsed .gitattributes by blob id, and the
// attribute files on the way to each directory seen.
type attrState struct {
	store  *tree.Store
	root   plumbing.Hash // OURS's root tree
	gitDir string        // "" when the store has no directory

	ready  atomic.Bool
	initMu sync.Mutex
	// Fixed once ready:
	slots      map[string]int // attribute name -> slot: merge, conflict-marker-size, then macros
	macros     [][]attrSet    // by slot; nil for an attribute that is no macro
	info       *attrFile      // $GIT_DIR/info/attributes (nil: none)
	drivers    map[string]*mergeDriver
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
func (s *attrState) listingOf(d *attrDir) (*tree.Listing, error) {
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
func (s *attrState) init() error {
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
		if err := s.readConfig(); err != nil {
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
		if e, ok := l.Lookup(".gitattributes"); ok && typeClass(e.Kind) == tree.File {
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
	data, err := io.ReadAll(io.LimitReader(f, maxAttrFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %s: %w", name, err)
	}
	if len(data) > maxAttrFileSize {
		return nil, fmt.Errorf("merge attributes: %s is over the %d bytes gitnfs reads", name, maxAttrFileSize)
	}
	return data, nil
}

// readBlob reads a .gitattributes blob (at path, for messages).
func (s *attrState) readBlob(h plumbing.Hash, path string) ([]byte, error) {
	size, err := s.store.BlobSize(h)
	if err != nil {
		return nil, fmt.Errorf("merge attributes: %s (blob %s): %w", path, h, err)
	}
	if size > maxAttrFileSize {
		return nil, fmt.Errorf("merge attributes: %s (blob %s) is %d bytes, over the %d gitnfs reads", path, h, size, maxAttrFileSize)
	}
	buf := make([]byte, size)
	got := 0
	for got < len(buf) {
		n, err := s.store.ReadBlobAt(h, buf[got:], int64(got))
		got += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("merge attributes: %s (blob %s): %w", path, h, err)
		}
		if n == 0 {
			break
		}
	}
	if got != len(buf) {
		return nil, fmt.Errorf("merge attributes: %s (blob %s): read %d of %d bytes", path, h, got, size)
	}
	return buf, nil
}

// readConfig reads merge.default and the merge drivers of $GIT_DIR/config.
func (s *attrState) readConfig() error {
	name := filepath.Join(s.gitDir, "config")
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge attributes: %w", err)
	}
	defer f.Close()
	cfg := formatcfg.New()
	if err := formatcfg.NewDecoder(f).Decode(cfg); err != nil {
		return fmt.Errorf("merge attributes: %s: %w", name, err)
	}
	if !cfg.HasSection("merge") {
		return nil
	}
	sec := cfg.Section("merge")
	if sec.HasOption("default") {
		s.defDriver, s.hasDefault = sec.Option("default"), true
	}
	for _, sub := range sec.Subsections {
		if len(sub.Options) == 0 {
			continue // a bare [merge "x"] header defines nothing in git
		}
		if s.drivers == nil {
			s.drivers = map[string]*mergeDriver{}
		}
		d := &mergeDriver{name: sub.Name}
		if sub.HasOption("driver") {
			d.cmdline, d.hasCmd = sub.Option("driver"), true
		}
		s.drivers[sub.Name] = d
	}
	return nil
}

// lookup returns the merge attributes of path (git_check_attr for merge
// and conflict-marker-size, then find_ll_merge_driver).
func (s *attrState) lookup(path string) (mergeAttr, error) {
	merge, marker, some, err := s.values(path)
	if err != nil || !some {
		return mergeAttr{}, err
	}
	return s.decide(merge, marker, path)
}

// values returns path's merge and conflict-marker-size attributes; some is
// false when nothing can change its merge (no attribute file on the way
// sets them, and merge.default is unset).
func (s *attrState) values(path string) (merge, marker attrValue, some bool, err error) {
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
func (s *attrState) decide(merge, marker attrValue, path string) (mergeAttr, error) {
	var a mergeAttr
	if marker.k == avString {
		if n := cAtoi(marker.s); n > 0 && n != 7 {
			if n > maxMarkerSize {
				return mergeAttr{}, fmt.Errorf("%s: conflict-marker-size=%s is over the %d gitnfs writes", path, marker.s, maxMarkerSize)
			}
			a.marker = n
		}
	}
	var name string
	switch merge.k {
	case avTrue:
		return a, nil
	case avFalse:
		return mergeAttr{kind: drvBinary}, nil // no markers: the size does not matter
	case avString:
		name = merge.s
	default:
		if !s.hasDefault {
			return a, nil
		}
		name = s.defDriver
	}
	if d := s.drivers[name]; d != nil {
		a.kind, a.drv = drvExternal, d
		return a, nil
	}
	switch name {
	case "binary":
		return mergeAttr{kind: drvBinary}, nil
	case "union":
		return mergeAttr{kind: drvUnion}, nil
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
func (s *attrState) dir(dir string) (*attrDir, error) {
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
		if e, ok := l.Lookup(".gitattributes"); ok && typeClass(e.Kind) == tree.File {
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
func (s *attrState) file(h plumbing.Hash, path string) (*attrFile, error) {
	s.mu.RLock()
	f, bad := s.files[h], s.bad[h]
	s.mu.RUnlock()
	if f != nil || bad != nil {
		return f, bad
	}
	data, err := s.readBlob(h, path)
	if err != nil {
		if size, serr := s.store.BlobSize(h); serr == nil && size > maxAttrFileSize {
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
func (s *attrState) compile(raw []rawAttrLine) *attrFile {
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

func (s *attrState) compileStates(raw []rawAttrSet) []attrSet {
	var out []attrSet
	for _, st := range raw {
		if slot, ok := s.slots[st.name]; ok {
			out = append(out, attrSet{slot: slot, v: st.v})
		}
	}
	return out
}

// The attributes file format (attr.c, git 2.39).

type rawAttrLine struct {
	macro  string // a macro definition "[attr]NAME ..."; else pat applies
	pat    attrPattern
	states []rawAttrSet
}

type rawAttrSet struct {
	name string
	v    attrValue
}

const attrBlank = " \t\r\n"

// parseAttrs parses an attributes file as git reads one from a work tree:
// lines split at LF (a CR before it dropped), a UTF-8 BOM skipped, each
// line ending at a NUL byte; [attr] macros only where macroOK.
func parseAttrs(data []byte, macroOK bool) []rawAttrLine {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var out []rawAttrLine
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if l, ok := parseAttrLine(string(line), macroOK); ok {
			out = append(out, l)
		}
	}
	return out
}

func cspan(s, set string) int {
	if i := strings.IndexAny(s, set); i >= 0 {
		return i
	}
	return len(s)
}

func trimBlank(s string) string { return strings.TrimLeft(s, attrBlank) }

// parseAttrLine is parse_attr_line.
func parseAttrLine(line string, macroOK bool) (rawAttrLine, bool) {
	cp := trimBlank(line)
	if cp == "" || cp[0] == '#' {
		return rawAttrLine{}, false
	}
	if len(line) >= attrMaxLineLength {
		return rawAttrLine{}, false
	}
	var name, states string
	quoted := false
	if cp[0] == '"' {
		name, states, quoted = unquoteC(cp)
	}
	if !quoted {
		n := cspan(cp, attrBlank)
		name, states = cp[:n], cp[n:]
	}
	var l rawAttrLine
	const macroPrefix = "[attr]"
	if len(name) > len(macroPrefix) && strings.HasPrefix(name, macroPrefix) {
		if !macroOK {
			return rawAttrLine{}, false
		}
		m := trimBlank(name[len(macroPrefix):])
		m = m[:cspan(m, attrBlank)]
		if !attrNameValid(m) {
			return rawAttrLine{}, false
		}
		l.macro = m
	}
	for states = trimBlank(states); states != ""; {
		ep := cspan(states, attrBlank)
		tok := states[:ep]
		states = trimBlank(states[ep:])
		attr, value, hasValue := strings.Cut(tok, "=")
		v := attrValue{k: avTrue}
		switch {
		case attr != "" && attr[0] == '-':
			attr, v = attr[1:], attrValue{k: avFalse}
		case attr != "" && attr[0] == '!':
			attr, v = attr[1:], attrValue{k: avUnspecified}
		case hasValue:
			v = attrValue{k: avString, s: value}
		}
		if !attrNameValid(attr) {
			return rawAttrLine{}, false // git rejects the whole line
		}
		l.states = append(l.states, rawAttrSet{name: attr, v: v})
	}
	if l.macro == "" {
		p, ok := parsePattern(name)
		if !ok {
			return rawAttrLine{}, false
		}
		l.pat = p
	}
	return l, true
}

// attrNameValid is attr_name_valid: [-A-Za-z0-9_.]+, not starting with '-'.
func attrNameValid(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '-' && c != '.' && c != '_' && !('0' <= c && c <= '9') && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// unquoteC is unquote_c_style: s starts with '"'; ok is false when s is
// not a valid C-quoted string (git then reads the pattern unquoted).
func unquoteC(s string) (name, rest string, ok bool) {
	var b strings.Builder
	i := 1
	for {
		j := i + cspan(s[i:], "\"\\")
		b.WriteString(s[i:j])
		if j >= len(s) {
			return "", "", false
		}
		i = j + 1
		if s[j] == '"' {
			return b.String(), s[i:], true
		}
		if i >= len(s) {
			return "", "", false
		}
		c := s[i]
		i++
		switch c {
		case 'a':
			c = '\a'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		case '\\', '"':
		case '0', '1', '2', '3':
			if i+2 > len(s) || s[i] < '0' || s[i] > '7' || s[i+1] < '0' || s[i+1] > '7' {
				return "", "", false
			}
			c = (c-'0')<<6 | (s[i]-'0')<<3 | (s[i+1] - '0')
			i += 2
		default:
			return "", "", false
		}
		b.WriteByte(c)
	}
}

// cAtoi is C's atoi as glibc has it: (int)strtol(s, NULL, 10).
func cAtoi(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if v > (math.MaxUint64-9)/10 {
			v = math.MaxUint64 // strtol saturates
		} else {
			v = v*10 + uint64(s[i]-'0')
		}
	}
	var l int64
	switch {
	case neg && v > math.MaxInt64:
		l = math.MinInt64
	case neg:
		l = -int64(v)
	case v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int(int32(l)) // (int)long keeps the low 32 bits
}

// attrPattern is a gitattributes pattern (dir.c's parse_path_pattern).
type attrPattern struct {
	pat      string
	nodir    bool // no '/': matches the basename at any depth
	endsWith bool // "*literal"
	prefix   int  // length of the leading part without wildcards
}

// parsePattern parses a pattern; ok is false for a pattern that never
// matches a file: a negative one (git ignores those) or one that only
// matches directories (trailing '/').
func parsePattern(p string) (attrPattern, bool) {
	if strings.HasPrefix(p, "!") || strings.HasSuffix(p, "/") {
		return attrPattern{}, false
	}
	a := attrPattern{pat: p, nodir: !strings.Contains(p, "/"), prefix: cspan(p, "*?[\\")}
	a.endsWith = strings.HasPrefix(p, "*") && !strings.ContainsAny(p[1:], "*?[\\")
	return a, true
}

// match is path_matches for a file path whose basename is base, against a
// pattern of the attributes file in directory dir.
func (a *attrPattern) match(path, base, dir string) bool {
	if a.nodir {
		switch {
		case a.prefix == len(a.pat):
			return a.pat == base
		case a.endsWith:
			return strings.HasSuffix(base, a.pat[1:])
		}
		return wildmatch(a.pat, base, false)
	}
	// match_pathname: the pattern is relative to dir.
	pat, prefix := a.pat, a.prefix
	if pat[0] == '/' {
		pat, prefix = pat[1:], prefix-1
	}
	if len(path) < len(dir)+1 || (dir != "" && path[len(dir)] != '/') || path[:len(dir)] != dir {
		return false
	}
	name := path
	if dir != "" {
		name = path[len(dir)+1:]
	}
	if prefix > 0 {
		if prefix > len(name) || pat[:prefix] != name[:prefix] {
			return false
		}
		pat, name = pat[prefix:], name[prefix:]
		if pat == "" && name == "" {
			return true
		}
	}
	return wildmatch(pat, name, true)
}

// wildmatch is git's wildmatch (without WM_CASEFOLD); pathname is
// WM_PATHNAME ('*' and '?' do not match '/', "**/" matches directories).
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// dowild is wildmatch.c's dowild, with indices for pointers (0 past the
// end, as C's terminating NUL).
func dowild(p, text string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		tch := at(text, ti)
		if ti >= len(text) && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			pi++
			if tch != at(p, pi) {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			pi++
			if at(p, pi) == '*' {
				prev := pi - 2
				for pi++; at(p, pi) == '*'; pi++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prev < 0 || p[prev] == '/') &&
					(pi >= len(p) || p[pi] == '/' || (p[pi] == '\\' && at(p, pi+1) == '/')):
					if at(p, pi) == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if pi >= len(p) {
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti += slash
				continue // the slash is matched by the loop's increment
			}
			for {
				if ti >= len(text) {
					break
				}
				if !isGlobSpecial(p[pi]) {
					pch = p[pi]
					for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != pch {
						ti++
					}
					if at(text, ti) != pch {
						return wmNoMatch
					}
				}
				tch = at(text, ti)
				if m := dowild(p[pi:], text[ti:], pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			pch = at(p, pi)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				pi++
				pch = at(p, pi)
			}
			var prevCh byte
			matched := false
			for {
				if pi >= len(p) {
					return wmAbortAll
				}
				switch {
				case pch == '\\':
					pi++
					pch = at(p, pi)
					if pi >= len(p) {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				case pch == '-' && prevCh != 0 && pi+1 < len(p) && p[pi+1] != ']':
					pi++
					pch = p[pi]
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pi >= len(p) {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prevCh {
						matched = true
					}
					pch = 0 // so that prevCh is 0
				case pch == '[' && at(p, pi+1) == ':':
					pi += 2
					s := pi
					for pi < len(p) && p[pi] != ']' {
						pi++
					}
					if pi >= len(p) {
						return wmAbortAll
					}
					i := pi - s - 1
					if i < 0 || p[pi-1] != ':' {
						// No ":]": a plain '[' in the set.
						pi = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
						break
					}
					in, ok := charClass(p[s:s+i], tch)
					if !ok {
						return wmAbortAll
					}
					if in {
						matched = true
					}
					pch = 0
				default:
					if tch == pch {
						matched = true
					}
				}
				prevCh = pch
				pi++
				pch = at(p, pi)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tch != pch {
				return wmNoMatch
			}
			continue
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass is a [:class:] of wildmatch, with git's ASCII-only ctype.
func charClass(class string, c byte) (in, ok bool) {
	lower := 'a' <= c && c <= 'z'
	upper := 'A' <= c && c <= 'Z'
	digit := '0' <= c && c <= '9'
	switch class {
	case "alnum":
		return lower || upper || digit, true
	case "alpha":
		return lower || upper, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return lower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !lower && !upper && !digit, true
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r'), true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}

// The merge drivers.

// mergeByAttr merges c's three versions under a (a binary or external
// driver; the text and union merges are merge3's, in compute).
func (f *FS) mergeByAttr(c *cfile, path string, a mergeAttr) (*mat, error) {
	if a.kind == drvBinary {
		size, err := f.store.BlobSize(c.ours)
		if err != nil {
			return nil, err
		}
		return &mat{outcome: outcome{size: size, conflicts: 1, binary: true}, blob: c.ours}, nil
	}
	data, conflicted, err := f.runDriver(c, path, a)
	if err != nil {
		return nil, err
	}
	f.store.Stats().ContentMerges.Add(1)
	o := outcome{size: int64(len(data))}
	if conflicted {
		o.conflicts = 1
	}
	f.store.Stats().MergedBytes.Add(int64(len(data)))
	return &mat{outcome: o, data: data}, nil
}

// runDriver is ll_ext_merge: the three versions in temporary files, the
// command line expanded and run by /bin/sh, %A read back.
func (f *FS) runDriver(c *cfile, path string, a mergeAttr) (data []byte, conflicted bool, err error) {
	d := a.drv
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: merge driver %q (merge.%s.driver): %s", path, d.name, d.name, fmt.Sprintf(format, args...))
	}
	if !d.hasCmd {
		return nil, false, fail("no command line configured")
	}
	dir, err := os.MkdirTemp("", "gitnfs-merge-driver-")
	if err != nil {
		return nil, false, fail("%v", err)
	}
	defer os.RemoveAll(dir)
	var names [3]string
	for i, h := range [3]plumbing.Hash{c.base, c.ours, c.theirs} {
		if names[i], err = f.tempBlob(dir, h); err != nil {
			return nil, false, fail("%v", err)
		}
	}
	output, err := os.CreateTemp(dir, ".gitnfs-driver-output-")
	if err != nil {
		return nil, false, fail("%v", err)
	}
	defer output.Close()

	// %L is ll_merge's marker size: the attribute's, plus merge-ort's
	// extra length for a merge whose result is merged again.
	cmdline := expandDriver(d.cmdline, names, a.markerSize()+c.extraMarker, path)
	ctx, cancel := context.WithTimeout(context.Background(), driverTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, false, fail("killed after %v", driverTimeout)
	}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		conflicted = true // any non-zero status, or a signal, as in git
	default:
		return nil, false, fail("cannot run %q: %v", cmdline, runErr)
	}
	res, err := os.Open(filepath.Join(dir, names[1]))
	if err != nil {
		return nil, false, fail("no result left in %%A: %v%s", err, tail(output))
	}
	defer res.Close()
	data, err = io.ReadAll(io.LimitReader(res, maxDriverResult+1))
	if err != nil {
		return nil, false, fail("reading %%A: %v", err)
	}
	if len(data) > maxDriverResult {
		return nil, false, fail("result over %d bytes", maxDriverResult)
	}
	return data, conflicted, nil
}

// tempBlob writes blob h (empty for the zero hash) to a new file in dir,
// named as git names them, and returns its name.
func (f *FS) tempBlob(dir string, h plumbing.Hash) (string, error) {
	t, err := os.CreateTemp(dir, ".merge_file_")
	if err != nil {
		return "", err
	}
	defer t.Close()
	if !h.IsZero() {
		buf := make([]byte, 64<<10)
		var off int64
		for {
			n, err := f.store.ReadBlobAt(h, buf, off)
			if _, werr := t.Write(buf[:n]); werr != nil {
				return "", werr
			}
			off += int64(n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return "", err
			}
			if n == 0 {
				return "", fmt.Errorf("blob %s: short read at %d", h, off)
			}
		}
	}
	if err := t.Close(); err != nil {
		return "", err
	}
	return filepath.Base(t.Name()), nil
}

// tail is the end of what the driver printed, for an error message.
func tail(output *os.File) string {
	fi, err := output.Stat()
	if err != nil || fi.Size() == 0 {
		return ""
	}
	off := max(fi.Size()-512, 0)
	buf := make([]byte, fi.Size()-off)
	n, _ := output.ReadAt(buf, off)
	return "; it printed: " + strings.TrimSpace(string(buf[:n]))
}

// expandDriver is strbuf_expand with ll_ext_merge's placeholders: %O %A %B
// the temporary files, %L the marker size, %P the path shell-quoted, %%
// a percent sign; any other % stays as typed.
func expandDriver(cmdline string, names [3]string, marker int, path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(cmdline, '%')
		if i < 0 {
			b.WriteString(cmdline)
			return b.String()
		}
		b.WriteString(cmdline[:i])
		cmdline = cmdline[i+1:]
		switch at(cmdline, 0) {
		case '%':
			b.WriteByte('%')
		case 'O':
			b.WriteString(names[0])
		case 'A':
			b.WriteString(names[1])
		case 'B':
			b.WriteString(names[2])
		case 'L':
			b.WriteString(strconv.Itoa(marker))
		case 'P':
			b.WriteString(shellQuote(path))
		default:
			b.WriteByte('%')
			continue
		}
		cmdline = cmdline[1:]
	}
}

// shellQuote is git's sq_quote_buf: single quotes, with ' and ! outside.
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\'' || c == '!' {
			b.WriteString("'\\")
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// textOptions are merge3's options for the text and union drivers.
func (a mergeAttr) textOptions(opts merge3.Options) merge3.Options {
	opts.MarkerSize = a.marker
	if a.kind == drvUnion {
		opts.Favor = merge3.FavorUnion
	}
	return opts
}
