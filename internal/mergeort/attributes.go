package mergeort

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"

	"github.com/gitnfs/gitnfs/internal/gitattr"
	"github.com/gitnfs/gitnfs/merge3"
)

// What .gitattributes make of a content merge (internal/gitattr decides
// which attributes apply; this file applies them): the text merge's
// options, the binary and external drivers (driver.go), and the cache key
// of an outcome, which must tell apart two merges of the same versions
// under different attributes.

// attrKey is the cache key of c's outcome at path under a: c's own key when
// the attributes change nothing, else a key that also holds the driver and
// the marker size (and, for a driver, which sees %P, the path).
func attrKey(a gitattr.Merge, c *File, path string) [20]byte {
	if a == (gitattr.Merge{}) {
		return c.key
	}
	h := sha1.New()
	h.Write([]byte("gitnfs merge attributes\x00"))
	h.Write(c.key[:])
	var buf [5]byte
	buf[0] = byte(a.Kind)
	binary.BigEndian.PutUint32(buf[1:], uint32(a.Marker))
	h.Write(buf[:])
	if a.Driver != nil {
		fmt.Fprintf(h, "%s\x00%s\x00%s", a.Driver.Name, a.Driver.Cmdline, path)
	}
	var k [20]byte
	copy(k[:], h.Sum(nil))
	return k
}

// mergeAttrOf returns the attributes of c's merge at path and the key its
// outcome is cached under. A File that is not a content merge has none.
func (f *Result) mergeAttrOf(c *File, path string) (gitattr.Merge, [20]byte, error) {
	if !c.merge {
		return gitattr.Merge{}, c.key, nil
	}
	a, err := f.gitattributes().Merge(path)
	if err != nil {
		return gitattr.Merge{}, c.key, err
	}
	return a, attrKey(a, c, path), nil
}

// gitattributes is the merge's attribute lookup, made on first use. The
// attributes are OURS's (what a checkout of ours would have), also for the
// inner merges of a virtual merge base (git reads the work tree's).
func (f *Result) gitattributes() *gitattr.Checkout {
	f.gitattrsOnce.Do(func() {
		root := f.ours.Root
		if !f.gitattrsFrom.IsZero() {
			root = f.gitattrsFrom
		}
		f.gitattrs = gitattr.NewCheckout(f.store, root)
	})
	return f.gitattrs
}

// textOptions are merge3's options for the text and union drivers.
func textOptions(a gitattr.Merge, opts merge3.Options) merge3.Options {
	opts.MarkerSize = a.Marker
	if a.Kind == gitattr.Union {
		opts.Favor = merge3.FavorUnion
	}
	return opts
}
