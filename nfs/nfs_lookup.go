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
	var n vfs.Node
	switch string(name) {
	case ".":
		n = dir
	case "..":
		n, err = s.parent(dir)
	default:
		n, err = s.fs.Lookup(dir, string(name))
	}
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, join(dir.Path, string(name))), &dir)
	}
	a, err := s.fs.Attr(n)
	if err != nil {
		return s.failWithAttr(e, s.status(err, c, n.Path), &dir)
	}
	e.uint32(nfsOK)
	e.uint32(uint32(handleLen(n)))
	e.b = appendHandle(e.b, s.fsid, n)
	e.pad(handleLen(n))
	e.bool(true)
	putFattr(e, &a)
	s.putPostOpAttr(e, dir)
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
