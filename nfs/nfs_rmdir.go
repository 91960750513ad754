package nfs

func onRmdir(s *view, c *call, d *decoder, e *encoder) uint32 {
	return removeEntry(s, c, d, e, nameRmdir)
}
