package worktree

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitnfs/gitnfs/tree"
	"github.com/gitnfs/gitnfs/tree/gitindex"
	"github.com/gitnfs/gitnfs/vfs"
)

// StatOf is the stat data git stores for a file the export serves with
// attributes a: what a client's lstat of the file returns, cut as git's
// fill_stat_data cuts it. The fattr3 the server sends carries these, and
// the Linux client turns them into struct stat as follows (fs/nfs:
// nfs_fattr -> inode, nfs_getattr -> kstat):
//   - mtime and ctime: fattr3's, seconds (32 bits on the wire) and
//     nanoseconds; git keeps both (it compares nanoseconds only when built
//     with USE_NSEC, but stores them either way).
//   - ino: the fileid whole on a 64-bit kernel (nfs_compat_user_ino64 folds
//     it only with nfs.enable_ino64=0); macOS returns the fileid as
//     va_fileid, 64-bit for NFSv3 (VA_64BITOBJIDS), into a 64-bit st_ino.
//     git stores (unsigned int)st_ino: the low 32 bits.
//   - uid, gid: fattr3's (AUTH_SYS, no id mapping in NFSv3).
//   - size: fattr3's; git stores the low 32 bits.
//   - dev: the client's own number for the mount, unknown to the server.
//     git compares it only when built with USE_STDEV, which is not the
//     default ("st_dev breaks on network filesystems"): 0.
//
// With core.checkStat=default git compares mtime, ctime, size, ino, uid and
// gid (statinfo.c's match_stat_data); the index's mode comes from the tree,
// as git writes it (100644, 100755, 120000, 160000).
func StatOf(a vfs.Attr) gitindex.Stat {
	return gitindex.Stat{
		Mtime: timeOf(a.Time),
		Ctime: timeOf(a.CtimeOf()),
		Ino:   uint32(a.Fileid),
		UID:   a.UID,
		GID:   a.GID,
		Size:  uint32(a.Size),
	}
}

func timeOf(t time.Time) gitindex.Time {
	return gitindex.Time{Sec: uint32(t.Unix()), Nsec: uint32(t.Nanosecond())}
}

// AttrFunc gives an export's attributes of one path of its tree (e is the
// tree entry, size the blob's size or -1), as the export serves them.
type AttrFunc func(path string, e tree.Entry, size int64) (vfs.Attr, error)

// BuildIndex builds the index of the served tree root, each entry's stat
// data what the export's attributes make of it (StatOf).
//
// root is HEAD's tree, and attr must describe each file as that tree has
// it: for a path a writable layer has changed since, the attributes the
// unchanged file had, never the current ones. Stat data that matches the
// current file tells git its content is HEAD's blob, and git would not
// read it to see the change.
func BuildIndex(s *tree.Store, root plumbing.Hash, attr AttrFunc) (*gitindex.Index, error) {
	return gitindex.Build(s, root, func(path string, e tree.Entry, size int64) (gitindex.Stat, error) {
		a, err := attr(path, e, size)
		if err != nil {
			return gitindex.Stat{}, err
		}
		return StatOf(a), nil
	})
}
