package mount

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// State records a mount made by gitnfs mount, so that gitnfs umount can undo
// it from another process. One file per mountpoint, JSON.
type State struct {
	Mountpoint string `json:"mountpoint"` // absolute, symlinks resolved
	PID        int    `json:"pid"`        // the server: gitnfs serve (0: a server gitnfs mount did not start)
	// Shared is the address of an already running server the mount was
	// made from (gitnfs mount --server): umount leaves it running.
	Shared string `json:"shared,omitempty"`
	Port   int    `json:"port"`
	Host   string `json:"host,omitempty"`
	Repo   string `json:"repo"`
	Rev    string `json:"rev"`
	Object string `json:"object,omitempty"` // what rev resolved to: "commit 3f2a1c9e0b7d" or "tree ..."
	// Supervisor is the pid of a foreground gitnfs mount that owns the
	// mount and unmounts it when signalled; 0 for --background.
	Supervisor int       `json:"supervisor,omitempty"`
	Executable string    `json:"executable,omitempty"` // the gitnfs binary that runs the server
	Log        string    `json:"log,omitempty"`        // the background server's stdout and stderr
	Options    string    `json:"options,omitempty"`    // the -o argument the mount used
	Started    time.Time `json:"started"`
}

// StateDirs returns where state files live, preferred first:
// $XDG_RUNTIME_DIR/gitnfs when XDG_RUNTIME_DIR is an absolute path, and
// /tmp/gitnfs-UID.
func StateDirs(getenv func(string) string, uid int) []string {
	var dirs []string
	if x := getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		dirs = append(dirs, filepath.Join(x, "gitnfs"))
	}
	return append(dirs, filepath.Join("/tmp", "gitnfs-"+strconv.Itoa(uid)))
}

// StateFileName is the file name of mountpoint's state: a readable form of
// the path plus a hash of it, so that distinct paths never share a file.
func StateFileName(mountpoint string) string {
	sum := sha256.Sum256([]byte(mountpoint))
	var b strings.Builder
	for _, r := range strings.Trim(mountpoint, "/") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := b.String()
	if name == "" {
		name = "root"
	}
	return name + "." + hex.EncodeToString(sum[:6]) + ".json"
}

// EnsureStateDir creates dir (mode 0700) if needed and checks that it is a
// real directory owned by uid that no one else can write: /tmp is shared, and
// a state file names a pid that gitnfs umount will signal.
func EnsureStateDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	return checkStateDir(dir, uid)
}

func checkStateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a directory (a %s); remove it", dir, kind(fi.Mode()))
	}
	if owner, ok := fileOwner(fi); ok && owner != uid {
		return fmt.Errorf("state directory %s belongs to uid %d, not %d; refusing to use it", dir, owner, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("state directory %s is writable by others (mode %v); refusing to use it (chmod 700 it)", dir, fi.Mode().Perm())
	}
	return nil
}

// WriteState writes s into dir atomically and returns the file's path.
func WriteState(dir string, s State) (string, error) {
	if s.Mountpoint == "" || !filepath.IsAbs(s.Mountpoint) {
		return "", fmt.Errorf("state: mountpoint %q is not an absolute path", s.Mountpoint)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, StateFileName(s.Mountpoint))
	tmp, err := os.CreateTemp(dir, ".state-*")
	if err != nil {
		return "", fmt.Errorf("state file in %s: %w", dir, err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("state file %s: %w", path, werr)
	}
	return path, nil
}

// ReadState reads one state file.
func ReadState(path string) (State, error) {
	var s State
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("state file %s: %w", path, err)
	}
	if s.Mountpoint == "" {
		return s, fmt.Errorf("state file %s names no mountpoint", path)
	}
	return s, nil
}

// ErrNoState says that no state file records a mountpoint.
var ErrNoState = errors.New("no gitnfs state")

// FindState returns the state recorded for mountpoint in dirs and the path
// of its file. It looks for the file named after mountpoint first, then for
// any file in dirs that records mountpoint. Its error wraps ErrNoState when
// there is none.
func FindState(dirs []string, mountpoint string) (State, string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, StateFileName(mountpoint))
		if s, err := ReadState(p); err == nil && s.Mountpoint == mountpoint {
			return s, p, nil
		}
	}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.json"))
		for _, p := range files {
			if s, err := ReadState(p); err == nil && s.Mountpoint == mountpoint {
				return s, p, nil
			}
		}
	}
	return State{}, "", fmt.Errorf("%w for %s (looked in %s)", ErrNoState, mountpoint, strings.Join(dirs, ", "))
}
