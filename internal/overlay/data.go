package overlay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// dataDir holds the bytes of upper files, one real file per inode, named
// by the inode's fileid in hex (data/0123456789abcdef). No name a client
// chooses ever becomes a path on the host: the client's tree lives in the
// journal, so nothing it does (a name, a symlink, a rename) can make the
// server open anything outside DIR. Every open is relative to the data
// directory's descriptor with O_NOFOLLOW, so a symlink planted in DIR is
// refused rather than followed.
type dataDir struct {
	dir *os.File
	fd  int

	mu      sync.Mutex
	files   map[uint64]*dataFile
	pending map[uint64]struct{} // made since the last fsync of the directory
	disk    *disk
}

type dataFile struct {
	f    *os.File
	refs int
	gone bool
}

// maxOpenFiles bounds the cached descriptors.
const maxOpenFiles = 256

func dataName(id uint64) string { return fmt.Sprintf("%016x", id) }

func openDataDir(dirfd int, readOnly bool, dk *disk) (*dataDir, error) {
	if !readOnly {
		if err := unix.Mkdirat(dirfd, "data", 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("data directory: %w", err)
		}
	}
	fd, err := unix.Openat(dirfd, "data", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if readOnly && errors.Is(err, unix.ENOENT) {
			return &dataDir{fd: -1, files: map[uint64]*dataFile{}, pending: map[uint64]struct{}{}, disk: dk}, nil
		}
		return nil, fmt.Errorf("data directory (must be a real directory, not a symlink): %w", err)
	}
	return &dataDir{dir: os.NewFile(uintptr(fd), "data"), fd: fd, files: map[uint64]*dataFile{}, pending: map[uint64]struct{}{}, disk: dk}, nil
}

func (d *dataDir) close() {
	d.mu.Lock()
	for id, df := range d.files {
		if df.refs == 0 {
			df.f.Close()
		}
		df.gone = true
		delete(d.files, id)
	}
	d.mu.Unlock()
	if d.dir != nil {
		d.dir.Close()
	}
}

// open returns the data file of id, creating it (empty, exclusively) when
// create is set. Release it when done.
func (d *dataDir) open(id uint64, create bool) (*dataFile, error) {
	if d.fd < 0 {
		return nil, os.ErrNotExist
	}
	d.mu.Lock()
	if df := d.files[id]; df != nil && !create {
		df.refs++
		d.mu.Unlock()
		return df, nil
	}
	d.mu.Unlock()
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if create {
		flags |= unix.O_CREAT | unix.O_EXCL
	}
	name := dataName(id)
	fd, err := unix.Openat(d.fd, name, flags, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "data/" + name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("data/%s: not a regular file", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if create {
		d.pending[id] = struct{}{}
	}
	if df := d.files[id]; df != nil {
		f.Close()
		df.refs++
		return df, nil
	}
	if len(d.files) >= maxOpenFiles {
		for oid, o := range d.files {
			if o.refs == 0 {
				o.f.Close()
				delete(d.files, oid)
				if len(d.files) < maxOpenFiles*3/4 {
					break
				}
			}
		}
	}
	df := &dataFile{f: f, refs: 1}
	d.files[id] = df
	return df, nil
}

func (d *dataDir) release(df *dataFile) {
	d.mu.Lock()
	df.refs--
	if df.refs == 0 && df.gone {
		df.f.Close()
	}
	d.mu.Unlock()
}

// create makes the (empty) data file of a new inode.
func (d *dataDir) create(id uint64) error {
	df, err := d.open(id, true)
	if err != nil {
		return err
	}
	d.release(df)
	return nil
}

// remove deletes id's data file; the journal no longer refers to it.
func (d *dataDir) remove(id uint64) {
	d.mu.Lock()
	if df := d.files[id]; df != nil {
		delete(d.files, id)
		df.gone = true
		if df.refs == 0 {
			df.f.Close()
		}
	}
	delete(d.pending, id)
	d.mu.Unlock()
	_ = unix.Unlinkat(d.fd, dataName(id), 0)
}

// fileStat is what attributes need from a data file.
type fileStat struct {
	size                uint64
	atime, mtime, ctime time.Time
}

func (d *dataDir) stat(id uint64) (fileStat, error) {
	df, err := d.open(id, false)
	if err != nil {
		return fileStat{}, err
	}
	defer d.release(df)
	var st unix.Stat_t
	if err := unix.Fstat(int(df.f.Fd()), &st); err != nil {
		return fileStat{}, err
	}
	ts := func(t unix.Timespec) time.Time { return time.Unix(int64(t.Sec), int64(t.Nsec)) }
	return fileStat{size: uint64(st.Size), atime: ts(st.Atim), mtime: ts(st.Mtim), ctime: ts(st.Ctim)}, nil
}

func (d *dataDir) readAt(id uint64, p []byte, off int64) (int, error) {
	df, err := d.open(id, false)
	if err != nil {
		return 0, err
	}
	defer d.release(df)
	return df.f.ReadAt(p, off)
}

func (d *dataDir) writeAt(id uint64, p []byte, off int64, sync bool) error {
	df, err := d.open(id, false)
	if err != nil {
		return err
	}
	defer d.release(df)
	if _, err := df.f.WriteAt(p, off); err != nil {
		return err
	}
	if sync {
		return d.syncOpen(id, df)
	}
	return nil
}

func (d *dataDir) truncate(id uint64, size int64) error {
	df, err := d.open(id, false)
	if err != nil {
		return err
	}
	defer d.release(df)
	return df.f.Truncate(size)
}

// sync puts id's bytes, and its name in the data directory, on stable
// storage.
func (d *dataDir) sync(id uint64) error {
	df, err := d.open(id, false)
	if err != nil {
		return err
	}
	defer d.release(df)
	return d.syncOpen(id, df)
}

func (d *dataDir) syncOpen(id uint64, df *dataFile) error {
	if d.disk.async {
		// Nothing was synced: the names stay pending for the next sync.
		return nil
	}
	if err := d.disk.sync(df.f); err != nil {
		return err
	}
	d.mu.Lock()
	_, pending := d.pending[id]
	var batch []uint64
	if pending {
		for p := range d.pending {
			batch = append(batch, p)
		}
	}
	d.mu.Unlock()
	if !pending {
		return nil
	}
	if err := d.disk.sync(d.dir); err != nil {
		return err
	}
	d.mu.Lock()
	for _, p := range batch {
		delete(d.pending, p)
	}
	d.mu.Unlock()
	return nil
}

// setTimes sets a data file's atime and/or mtime (nil leaves one as is).
func (d *dataDir) setTimes(id uint64, atime, mtime *time.Time) error {
	if atime == nil && mtime == nil {
		return nil
	}
	st, err := d.stat(id)
	if err != nil {
		return err
	}
	a, m := st.atime, st.mtime
	if atime != nil {
		a = *atime
	}
	if mtime != nil {
		m = *mtime
	}
	ts := []unix.Timespec{unix.NsecToTimespec(a.UnixNano()), unix.NsecToTimespec(m.UnixNano())}
	return unix.UtimesNanoAt(d.fd, dataName(id), ts, unix.AT_SYMLINK_NOFOLLOW)
}

// copyUp writes the first size bytes of src into id's data file, durably
// and atomically: a temporary file is filled and fsynced, renamed into
// place, and the directory fsynced, before the caller records the inode as
// upper (with Async: atomically only, the fsyncs skipped). A crash in
// between leaves an orphan that the next open deletes.
func (d *dataDir) copyUp(id uint64, size int64, src func(p []byte, off int64) (int, error)) error {
	tmp := dataName(id) + ".tmp"
	_ = unix.Unlinkat(d.fd, tmp, 0)
	fd, err := unix.Openat(d.fd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: "data/" + tmp, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = func() error {
		buf := make([]byte, min(size, 1<<20))
		for off := int64(0); off < size; {
			n := int(min(int64(len(buf)), size-off))
			got, err := src(buf[:n], off)
			if got > 0 {
				if _, werr := f.WriteAt(buf[:got], off); werr != nil {
					return werr
				}
				off += int64(got)
			}
			if err == io.EOF || (err == nil && got == 0) {
				break
			}
			if err != nil {
				return err
			}
		}
		if err := f.Truncate(size); err != nil {
			return err
		}
		return d.disk.sync(f)
	}()
	f.Close()
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, dataName(id))
	}
	if err == nil {
		err = d.disk.sync(d.dir)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("copy up %016x: %w", id, err)
	}
	return nil
}

// gc deletes what no inode refers to: temporaries of interrupted copy-ups,
// data of inodes dropped just before a crash.
func (d *dataDir) gc(keep func(id uint64) bool) error {
	ents, err := d.dir.ReadDir(-1)
	if _, serr := d.dir.Seek(0, io.SeekStart); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		id, perr := strconv.ParseUint(name, 16, 64)
		if strings.HasSuffix(name, ".tmp") || perr != nil || len(name) != 16 || !keep(id) {
			_ = unix.Unlinkat(d.fd, name, 0)
		}
	}
	return nil
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) }
