package nfs

// MOUNT v3 (RFC 1813 appendix I). go-nfs answers NULL, MNT and UMNT; the
// procedures it lacks are answered here, so that clients which ask for the
// export list (libnfs does unless told auto-traverse-mounts=0, showmount
// does) get a real answer instead of a malformed error.
const (
	mountProcMnt     = 1
	mountProcDump    = 2
	mountProcUmntAll = 4
	mountProcExport  = 5
)

var mountProcs = [...]procFunc{
	mountProcDump:    onMountDump,
	mountProcUmntAll: onMountUmntAll,
	mountProcExport:  onMountExport,
}

// onMountDump: the mount list is advisory and we keep none.
func onMountDump(s *view, c *call, d *decoder, e *encoder) uint32 {
	e.bool(false)
	return 0
}

func onMountUmntAll(s *view, c *call, d *decoder, e *encoder) uint32 { return 0 }

// onMountExport lists the one export, "/", open to every host (the server
// listens on loopback; see the security notes in the README).
func onMountExport(s *view, c *call, d *decoder, e *encoder) uint32 {
	e.bool(true)
	e.string("/")
	e.bool(false) // no groups
	e.bool(false) // end of list
	return 0
}
