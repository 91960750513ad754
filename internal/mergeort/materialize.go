package mergeort

import (
	"container/list"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/internal/gitattr"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

// Kind says why a path is conflicted; a path can be conflicted for several
// reasons at once (a file pushed aside by a directory that the other side
// modified is file/directory and modify/delete).
type Kind uint16

// Conflict kinds, named as git names them in its CONFLICT messages.
const (
	KindContent       Kind = 1 << iota // both sides changed the file and their hunks clash
	KindAddAdd                         // both sides added the path, differently
	KindModifyDelete                   // one side modified what the other deleted
	KindFileDirectory                  // a file where the other side has a directory: moved to path~BRANCH
	KindMode                           // both sides set different modes (644 and 755)
	KindBinary                         // both sides changed a binary file: ours is left
	KindDistinctTypes                  // file, symlink or submodule on each side: one moved to path~BRANCH
	KindSubmodule                      // both sides moved a submodule: ours is left
	KindRenameDelete                   // one side renamed what the other deleted: the renamed file stays
	KindRenameRename                   // both sides renamed the file, to different paths: both stay
	KindFileLocation                   // added into a directory the other side renamed: moved there, to be confirmed
)

var kindNames = []string{"content", "add/add", "modify/delete", "file/directory", "mode", "binary", "distinct types", "submodule", "rename/delete", "rename/rename", "file location"}

func (k Kind) String() string {
	var s []string
	for i, n := range kindNames {
		if k&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if len(s) == 0 {
		return "clean"
	}
	return strings.Join(s, ", ")
}

// File is a path that cannot be served from an existing blob without
// thinking: a conflicted path, or a both-sides-changed file whose merge may
// well be clean. Listing it costs nothing; its content and size exist only
// once it is materialized.
type File struct {
	key    [20]byte
	kinds  Kind       // the reasons known from the trees alone
	known  bool       // conflicted whatever the content merge says
	noBase bool       // no base file of this type: a content clash is add/add
	result tree.Entry // Kind always; Hash unless merge
	merge  bool       // a line-level merge of base, ours, theirs decides the bytes
	base   plumbing.Hash
	ours   plumbing.Hash
	theirs plumbing.Hash
	// labels replace the merge's labels when a rename brought the versions
	// from different paths ("REV:path", as merge-ort writes them).
	labels *merge3.Labels
	// extraMarker lengthens the markers of a merge whose result is merged
	// again (rename/rename, rename/add), as merge-ort does.
	extraMarker int
}

// Blobs are the blobs materializing c reads: its three versions for a
// line-level merge, else its result (none for a submodule, a commit id
// served as an empty directory). Zero ids stand for a missing version.
// A frontend that must not wait for a partial clone's fetch asks for them
// first (tree.Store.Local).
func (c *File) Blobs() [3]plumbing.Hash {
	switch {
	case c.merge:
		return [3]plumbing.Hash{c.base, c.ours, c.theirs}
	case c.result.Kind == tree.Gitlink:
		return [3]plumbing.Hash{}
	}
	return [3]plumbing.Hash{c.result.Hash}
}

func (c *File) contentKind() Kind {
	if c.noBase {
		return KindAddAdd
	}
	return KindContent
}

// conflict interns c by its content: the same three versions merge to the
// same bytes wherever they appear.
func (f *Result) conflict(c *File) *File {
	h := sha1.New()
	var buf [8]byte // kinds(2) kind known noBase merge extraMarker
	h.Write([]byte("gitnfs conflict\x00"))
	binary.BigEndian.PutUint16(buf[:2], uint16(c.kinds))
	buf[2] = byte(c.result.Kind)
	for i, b := range []bool{c.known, c.noBase, c.merge} {
		if b {
			buf[3+i] = 1
		}
	}
	buf[6] = byte(c.extraMarker)
	h.Write(buf[:7])
	for _, x := range []plumbing.Hash{c.result.Hash, c.base, c.ours, c.theirs} {
		h.Write(x[:])
	}
	if c.labels != nil {
		h.Write([]byte("\x00" + c.labels.Base + "\x00" + c.labels.Ours + "\x00" + c.labels.Theirs))
	}
	copy(c.key[:], h.Sum(nil))
	v, _ := f.files.LoadOrStore(c.key, c)
	return v.(*File)
}

// outcome is what a materialization decided; it is kept for every path
// ever materialized (a few bytes), so asking its size never merges twice even after
// the bytes were evicted.
type outcome struct {
	size      int64
	conflicts int  // conflict hunks written by the content merge
	binary    bool // not merged by content: ours was left
}

// mat is a materialized path: merged bytes, or an existing blob (a
// conflict resolved to a side: modify/delete, binary, distinct types...).
type mat struct {
	outcome
	data []byte
	blob plumbing.Hash
}

// conflicted reports whether c is a conflict once materialized as o.
func (c *File) conflicted(o outcome) bool { return c.known || o.conflicts > 0 }

// kindsOf is c's full set of reasons once materialized as o.
func (c *File) kindsOf(o outcome) Kind {
	k := c.kinds
	if c.merge && o.conflicts > 0 {
		k |= c.contentKind()
		if o.binary {
			k |= KindBinary
		}
	}
	return k
}

// maxXdiffSize is git's MAX_XDIFF_SIZE: bigger inputs are merged as binary
// (ours left), so they are never read whole.
const maxXdiffSize = 1024 * 1024 * 1023

// outcomeOf is c's size and status, materializing it if it never was.
func (f *Result) outcomeOf(c *File, path string) (outcome, error) {
	_, key, err := f.mergeAttrOf(c, path)
	if err != nil {
		return outcome{}, err
	}
	if v, ok := f.outcomes.Load(key); ok {
		return v.(outcome), nil
	}
	m, err := f.materialize(c, path)
	if err != nil {
		return outcome{}, err
	}
	return m.outcome, nil
}

// materialize computes c's content at path once however many callers ask
// at the same time, and keeps it in a byte-bounded LRU. The key is c's,
// unless path's merge attributes change the merge (see attributes.go).
func (f *Result) materialize(c *File, path string) (*mat, error) {
	a, key, err := f.mergeAttrOf(c, path)
	if err != nil {
		return nil, err
	}
	if m, ok := f.cache.get(key); ok {
		return m, nil
	}
	return f.flight.do(key, func() (*mat, error) {
		if m, ok := f.cache.get(key); ok {
			return m, nil
		}
		m, err := f.compute(c, path, a)
		if err != nil {
			return nil, err
		}
		f.store.Stats().ConflictsMaterialized.Add(1)
		f.outcomes.Store(key, m.outcome)
		f.cache.put(key, m, int64(len(m.data)))
		return m, nil
	})
}

func (f *Result) compute(c *File, path string, a gitattr.Merge) (*mat, error) {
	if !c.merge {
		m := &mat{blob: c.result.Hash}
		if c.result.Kind != tree.Gitlink { // a commit id, served as an empty directory
			size, err := f.store.BlobSize(c.result.Hash)
			if err != nil {
				return nil, err
			}
			m.size = size
		}
		return m, nil
	}
	if a.Kind == gitattr.Binary || a.Kind == gitattr.External {
		return f.mergeByAttr(c, path, a)
	}
	sizes := [3]int64{}
	for i, h := range []plumbing.Hash{c.base, c.ours, c.theirs} {
		if h.IsZero() {
			continue
		}
		s, err := f.store.BlobSize(h)
		if err != nil {
			return nil, err
		}
		sizes[i] = s
	}
	if sizes[0] > maxXdiffSize || sizes[1] > maxXdiffSize || sizes[2] > maxXdiffSize {
		if f.depth > 0 {
			return f.virtualBinary(c, sizes[0]), nil
		}
		return &mat{outcome: outcome{size: sizes[1], conflicts: 1, binary: true}, blob: c.ours}, nil
	}
	var in [3][]byte
	for i, h := range []plumbing.Hash{c.base, c.ours, c.theirs} {
		if h.IsZero() {
			continue
		}
		b, err := f.store.ReadBlob(h)
		if err != nil {
			return nil, err
		}
		in[i] = b
	}
	opts := textOptions(a, merge3.MergeTreeOptions(f.style))
	opts.Labels = f.labels
	if c.labels != nil {
		opts.Labels = *c.labels
	}
	if c.extraMarker > 0 {
		opts.MarkerSize = a.MarkerSize() + c.extraMarker
	}
	r := merge3.MergeWith(in[0], in[1], in[2], opts)
	f.store.Stats().ContentMerges.Add(1)
	if r.Binary {
		if f.depth > 0 {
			return f.virtualBinary(c, sizes[0]), nil
		}
		return &mat{outcome: outcome{size: sizes[1], conflicts: r.Conflicts, binary: true}, blob: c.ours}, nil
	}
	f.store.Stats().MergedBytes.Add(int64(len(r.Content)))
	return &mat{outcome: outcome{size: int64(len(r.Content)), conflicts: r.Conflicts}, data: r.Content}, nil
}

// virtualBinary is ll_binary_merge inside a virtual merge base: the base's
// bytes (empty without a base), cleanly.
func (f *Result) virtualBinary(c *File, baseSize int64) *mat {
	if c.base.IsZero() {
		return &mat{data: []byte{}}
	}
	return &mat{outcome: outcome{size: baseSize}, blob: c.base}
}

// readAt serves a materialized path as tree.Store.ReadBlobAt serves a blob
// (io.EOF when the read reaches the end).
func (f *Result) readAt(m *mat, p []byte, off int64) (int, error) {
	if m.data == nil {
		return f.store.ReadBlobAt(m.blob, p, off)
	}
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if off+int64(n) == int64(len(m.data)) {
		return n, io.EOF
	}
	return n, nil
}

// matCache is a byte-bounded LRU of materialized paths. A path served from
// an existing blob costs nothing here (the store caches blobs).
type matCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // front = most recent; values are *matItem
	items map[[20]byte]*list.Element
}

type matItem struct {
	key  [20]byte
	m    *mat
	cost int64
}

func newMatCache(max int64) *matCache {
	return &matCache{max: max, order: list.New(), items: map[[20]byte]*list.Element{}}
}

func (c *matCache) get(k [20]byte) (*mat, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*matItem).m, true
}

func (c *matCache) put(k [20]byte, m *mat, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.used -= el.Value.(*matItem).cost
		c.order.Remove(el)
		delete(c.items, k)
	}
	if cost > c.max {
		return // bigger than the whole cache: served this once, merged again next time
	}
	c.items[k] = c.order.PushFront(&matItem{key: k, m: m, cost: cost})
	c.used += cost
	for c.used > c.max {
		el := c.order.Back()
		it := el.Value.(*matItem)
		c.order.Remove(el)
		delete(c.items, it.key)
		c.used -= it.cost
	}
}

// flight runs one computation per key at a time; latecomers share it.
type flight struct {
	mu    sync.Mutex
	calls map[[20]byte]*flightCall
}

type flightCall struct {
	done chan struct{}
	m    *mat
	err  error
}

func (g *flight) do(k [20]byte, fn func() (*mat, error)) (m *mat, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[[20]byte]*flightCall{}
	}
	if c, ok := g.calls[k]; ok {
		g.mu.Unlock()
		<-c.done
		return c.m, c.err
	}
	c := &flightCall{done: make(chan struct{})}
	g.calls[k] = c
	g.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			// A bug in a merge must cost one path an error, not the server.
			c.m, c.err = nil, fmt.Errorf("materialize: panic: %v", r)
		}
		g.mu.Lock()
		delete(g.calls, k)
		g.mu.Unlock()
		close(c.done)
		m, err = c.m, c.err
	}()
	c.m, c.err = fn()
	return c.m, c.err
}
