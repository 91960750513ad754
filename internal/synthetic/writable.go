package synthetic

import (
	"fmt"

	"github.com/gitnfs/gitnfs/vfs"
)

// writable is the FS below's vfs.Writable, on an export that has one,
// refusing every change to a synthetic name: .git is read-only, nothing in
// the hidden directory changes (read-only, as before it was a layer: it was an export
// of its own with no Writable), a change that names a synthetic directory
// as its second directory crosses into another filesystem for the client
// (what it answered when the hidden directory was an export of its own),
// and the root's .gitnfs and .git, while they are this layer's, can be
// neither taken (they exist) nor removed or renamed away (read-only).
type writable struct {
	f     *FS
	below vfs.Writable
}

var _ vfs.Writable = (*writable)(nil)

// refuseIn refuses a change in dir, a synthetic directory.
func (w *writable) refuseIn(dir vfs.Node, name string) error {
	if w.f.mine(dir) {
		return fmt.Errorf("%s: %w", join(dir.Path, name), vfs.ErrReadOnly)
	}
	return nil
}

// refuseNew refuses making name in dir (or renaming or linking onto it):
// in a synthetic directory, or the name of a synthetic entry.
func (w *writable) refuseNew(dir vfs.Node, name string) error {
	if err := w.refuseIn(dir, name); err != nil {
		return err
	}
	if _, at, _ := w.f.entryAt(dir, name); at == synthetic {
		return fmt.Errorf("%s: %w: a synthetic entry", name, vfs.ErrExist)
	}
	return nil
}

// refuseOld refuses removing name from dir (or renaming it away).
func (w *writable) refuseOld(dir vfs.Node, name string) error {
	if err := w.refuseIn(dir, name); err != nil {
		return err
	}
	if _, at, _ := w.f.entryAt(dir, name); at == synthetic {
		return fmt.Errorf("%s: %w: a synthetic entry", name, vfs.ErrReadOnly)
	}
	return nil
}

// refuseNode refuses changing n itself.
func (w *writable) refuseNode(n vfs.Node) error {
	if w.f.mine(n) {
		return fmt.Errorf("%s: %w", n.Path, vfs.ErrReadOnly)
	}
	return nil
}

// crossing refuses a second directory that is synthetic: it was another
// export's, so the change crossed filesystems.
func (w *writable) crossing(dir vfs.Node) error {
	if w.f.mine(dir) {
		return fmt.Errorf("%s: %w", dir.Path, vfs.ErrXDev)
	}
	return nil
}

func (w *writable) ResolveOrigin(path string) (vfs.Node, error) { return w.below.ResolveOrigin(path) }

func (w *writable) Create(dir vfs.Node, name string, how vfs.CreateHow, attr vfs.SetAttr, verf [8]byte) (vfs.Node, error) {
	if err := w.refuseNew(dir, name); err != nil {
		return vfs.Node{}, err
	}
	n, err := w.below.Create(dir, name, how, attr, verf)
	return n, err
}

func (w *writable) Mkdir(dir vfs.Node, name string, attr vfs.SetAttr) (vfs.Node, error) {
	if err := w.refuseNew(dir, name); err != nil {
		return vfs.Node{}, err
	}
	n, err := w.below.Mkdir(dir, name, attr)
	return n, err
}

func (w *writable) Symlink(dir vfs.Node, name, target string, attr vfs.SetAttr) (vfs.Node, error) {
	if err := w.refuseNew(dir, name); err != nil {
		return vfs.Node{}, err
	}
	n, err := w.below.Symlink(dir, name, target, attr)
	return n, err
}

func (w *writable) Link(file, dir vfs.Node, name string) error {
	if err := w.refuseNode(file); err != nil {
		return err
	}
	if err := w.crossing(dir); err != nil {
		return err
	}
	if err := w.refuseNew(dir, name); err != nil {
		return err
	}
	return w.below.Link(file, dir, name)
}

func (w *writable) Write(n vfs.Node, p []byte, off int64, stable vfs.Stability) (vfs.Stability, error) {
	if err := w.refuseNode(n); err != nil {
		return 0, err
	}
	s, err := w.below.Write(n, p, off, stable)
	return s, err
}

func (w *writable) Commit(n vfs.Node) error {
	if err := w.refuseNode(n); err != nil {
		return err
	}
	return w.below.Commit(n)
}

func (w *writable) Setattr(n vfs.Node, attr vfs.SetAttr) error {
	if err := w.refuseNode(n); err != nil {
		return err
	}
	return w.below.Setattr(n, attr)
}

func (w *writable) Remove(dir vfs.Node, name string) error {
	if err := w.refuseOld(dir, name); err != nil {
		return err
	}
	return w.below.Remove(dir, name)
}

func (w *writable) Rmdir(dir vfs.Node, name string) error {
	if err := w.refuseOld(dir, name); err != nil {
		return err
	}
	return w.below.Rmdir(dir, name)
}

func (w *writable) Rename(fromDir vfs.Node, fromName string, toDir vfs.Node, toName string) error {
	if err := w.refuseIn(fromDir, fromName); err != nil {
		return err
	}
	if err := w.crossing(toDir); err != nil {
		return err
	}
	if err := w.refuseOld(fromDir, fromName); err != nil {
		return err
	}
	if err := w.refuseNew(toDir, toName); err != nil {
		return err
	}
	return w.below.Rename(fromDir, fromName, toDir, toName)
}

func (w *writable) WriteVerifier() [8]byte { return w.below.WriteVerifier() }
