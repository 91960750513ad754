package vfs

import (
	"errors"
	"time"
)

// Writable is implemented by an FS that can be changed. A frontend serving
// an FS without it answers every change "read-only file system".
//
// The frontend does what every FS would otherwise repeat: it decodes and
// validates names (one path component, not "." or ".."), checks that a
// directory argument is a directory, answers guards, and reports the
// attributes before and after a call from Attr. The FS gets clean names and
// nodes of the right type, and returns errors that wrap the Err* values of
// this package.
type Writable interface {
	// ResolveOrigin finds the node that a path-carrying handle names: the
	// file that had this path in the base tree, wherever it has been renamed
	// to since. A file deleted, or replaced by another under its name, is a
	// miss (ErrNoEnt); so is anything that never was in the base tree.
	ResolveOrigin(path string) (Node, error)

	// Create makes a regular file. With CreateUnchecked an existing regular
	// file is opened (attr applied, typically a truncation); with
	// CreateGuarded any existing name is ErrExist; with CreateExclusive the
	// verifier is stored with the file and a retransmitted create carrying
	// the same verifier returns the same file, any other existing name is
	// ErrExist.
	Create(dir Node, name string, how CreateHow, attr SetAttr, verf [8]byte) (Node, error)
	Mkdir(dir Node, name string, attr SetAttr) (Node, error)
	Symlink(dir Node, name, target string, attr SetAttr) (Node, error)
	// Link gives file (not a directory) a new name.
	Link(file, dir Node, name string) error
	// Write writes p at off. It returns the stability actually reached:
	// FileSync means the data (and the file's metadata) were on stable
	// storage before it returned.
	Write(n Node, p []byte, off int64, stable Stability) (Stability, error)
	// Commit puts everything written to n so far on stable storage.
	Commit(n Node) error
	Setattr(n Node, attr SetAttr) error
	Remove(dir Node, name string) error
	Rmdir(dir Node, name string) error
	// Rename moves fromDir/fromName to toDir/toName, replacing what is
	// there as rename(2) does; renaming a directory moves everything under
	// it. Every file keeps its fileid and its handle.
	Rename(fromDir Node, fromName string, toDir Node, toName string) error
	// WriteVerifier changes on every server start, so that a client resends
	// unstable writes a crash may have lost.
	WriteVerifier() [8]byte
}

// CreateHow is how Create treats an existing name (NFSv3's createmode3).
type CreateHow uint32

// createmode3 values.
const (
	CreateUnchecked CreateHow = 0
	CreateGuarded   CreateHow = 1
	CreateExclusive CreateHow = 2
)

// Stability is how far a write must reach before it returns (stable_how).
type Stability uint32

// stable_how values.
const (
	Unstable Stability = 0
	DataSync Stability = 1
	FileSync Stability = 2
)

// SetAttr is a request to change attributes: nil means "leave unchanged".
// A time the client asked to set to the server's clock arrives as that
// clock's value.
type SetAttr struct {
	Mode         *uint32 // permission bits (07777) only
	UID, GID     *uint32
	Size         *uint64
	Atime, Mtime *time.Time
}

// Errors an FS returns (wrapped) so that the frontend can pick the status.
var (
	ErrNoEnt       = errors.New("no such file or directory")
	ErrNotDir      = errors.New("not a directory")
	ErrStale       = errors.New("stale file handle")
	ErrExist       = errors.New("file exists")
	ErrNotEmpty    = errors.New("directory not empty")
	ErrIsDir       = errors.New("is a directory")
	ErrInval       = errors.New("invalid argument")
	ErrNameTooLong = errors.New("name too long")
	ErrPerm        = errors.New("operation not permitted")
	ErrNoSpace     = errors.New("no space left on device")
	ErrFBig        = errors.New("file too large")
	ErrNotSupp     = errors.New("operation not supported")
	ErrReadOnly    = errors.New("read-only file system")
	ErrAccess      = errors.New("permission denied")
	ErrXDev        = errors.New("cross-device link")
)
