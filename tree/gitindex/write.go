package gitindex

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// ErrLocked is wrapped when the index's lock file exists: git (or another
// writer) holds it, as git's own "Unable to create '.../index.lock': File
// exists" says.
var ErrLocked = errors.New("index is locked")

// WriteFile writes ix to path the way git's lockfile.c does: it creates
// path+".lock" with O_CREAT|O_EXCL (mode 0666 less the umask, as git's
// create_tempfile_mode), writes the whole index there and renames it over
// path, so a reader sees the old index or the new one, never a mix, and two
// writers never interleave. The lock is removed on any failure.
//
// The file's mtime ends up in a later second than every entry's mtime: git
// trusts an entry's stat data only when the index is newer than the file
// ("racily clean", read-cache.c's is_racy_stamp, compared in whole seconds
// when git is built without USE_NSEC); an entry dated in the index's second
// would make git read that file's content on every status. The clock is
// already later for a tree dated by its commit; an entry dated in the future
// moves the index's mtime to the second after it.
func WriteFile(path string, ix *Index) (err error) {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: unable to create %s: file exists", ErrLocked, lock)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(lock)
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	if err = ix.Encode(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = notRacy(lock, ix); err != nil {
		return err
	}
	return os.Rename(lock, path)
}

// notRacy moves the file's mtime past the newest entry's second when the
// clock has not passed it yet.
func notRacy(name string, ix *Index) error {
	var newest uint32
	for i := range ix.Entries {
		newest = max(newest, ix.Entries[i].Stat.Mtime.Sec)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	if uint32(fi.ModTime().Unix()) > newest {
		return nil
	}
	t := time.Unix(int64(newest)+1, 0)
	return os.Chtimes(name, t, t)
}
