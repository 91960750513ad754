package nfs

import "github.com/gitnfs/gitnfs/vfs"

func onLookup(s *view, c *call, d *decoder, e *encoder) uint32 {
	h := handleArg(d)
	name := d.opaque(1 << 16)
	if d.err != nil {
		return statusGarbageArgs
	}
	dir, err := s.resolve(h)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, ""), nil)
	}
	if len(name) > maxName {
		return s.failWithAttr(e, nfsErrNameLong, &dir)
	}
	// from is the directory's export; a junction (vfs.Synthetic: a
	// revision under .gitnfs/rev) answers a node of another, in which its
	// handle and attributes are made.
	from := s.export
	var n vfs.Node
	switch string(name) {
	case ".":
		n = dir
	case "..":
		n, err = s.parent(dir)
	default:
		n, err = s.lookup(dir, string(name))
	}
	var a vfs.Attr
	if err == nil {
		a, err = s.fs.Attr(n)
	}
	if err != nil {
		st := s.status(err, c, join(dir.Path, string(name)))
		s.export = from
		return s.failWithAttr(e, st, &dir)
	}
	e.uint32(nfsOK)
	e.uint32(uint32(handleLen(n)))
	e.b = appendHandle(e.b, s.export, n)
	e.pad(handleLen(n))
	e.bool(true)
	putFattr(e, &a)
	to := s.export
	s.export = from
	s.putPostOpAttr(e, dir)
	s.export = to
	return nfsOK
}

// parent resolves "..": the root is its own parent, as on any export.
func (s *view) parent(n vfs.Node) (vfs.Node, error) {
	if n.Path == "" {
		return n, nil
	}
	for i := len(n.Path) - 1; i >= 0; i-- {
		if n.Path[i] == '/' {
			return s.fs.Resolve(n.Path[:i])
		}
	}
	return s.fs.Root(), nil
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
