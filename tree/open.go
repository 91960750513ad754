package tree

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/gitnfs/gitnfs/tree/packfile"
)

// maxAlternateDepth is git's own limit on chained alternates.
const maxAlternateDepth = 5

// Open opens the repository at path: a work tree (with a .git directory or
// a .git file), a .git directory, or a bare repository.
func Open(path string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open %s: no such directory", abs)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", abs, err)
	case !fi.IsDir():
		return nil, fmt.Errorf("open %s: not a directory", abs)
	}

	gitdir, common, err := findGitDir(abs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	// The config is read once, here; a config git would refuse does not
	// stop serving (objects are read without it), but whoever asks it a
	// question gets the error (Store.Config).
	cfg, cfgErr := LoadConfig(ConfigFiles{GitDir: gitdir, CommonDir: common, Getenv: opts.getenv})
	if err := checkConfig(cfg); err != nil {
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}

	// go-git's own object cache only serves loose objects now (packed ones
	// are read by tree/packfile, with its own base cache): decoded trees,
	// sizes and inflated blobs have caches of their own above it. Its
	// default 96 MiB (about twice that in real memory) took most of the
	// 806 MiB peak RSS of a 100k-file walk and read (make bench, row 5);
	// it gets its share of the budget instead.
	objCache := cache.NewObjectLRU(cache.FileSize(opts.budget().GoGit))
	fsOpts := filesystem.Options{KeepDescriptors: true, LargeObjectThreshold: goGitLargeObject}

	// A linked worktree's gitdir holds only HEAD and per-worktree state;
	// objects and refs live in the common dir, which go-git maps for us.
	var root billy.Filesystem = osfs.New(gitdir)
	if common != gitdir {
		root = dotgit.NewRepositoryFilesystem(osfs.New(gitdir), osfs.New(common))
	}
	primary := filesystem.NewStorageWithOptions(root, objCache, fsOpts)
	objDir := filepath.Join(common, "objects")
	packed, err := packfile.Open(objDir)
	if err != nil {
		_ = primary.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	backends := []*backend{{st: primary, fs: primary, objDir: objDir, packs: packFingerprint(objDir), packed: packed}}

	// go-git only consults alternates in EncodedObject (not for sizes or
	// prefixes), re-reads them on every miss and resolves relative entries
	// against the wrong directory, so we chain alternate stores ourselves.
	alts, err := alternates(objDir)
	if err != nil {
		closeBackends(backends)
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	for _, dir := range alts {
		st := filesystem.NewStorageWithOptions(osfs.New(filepath.Dir(dir)), objCache, fsOpts)
		m, err := packfile.Open(dir)
		if err != nil {
			closeBackends(backends)
			_ = st.Close()
			return nil, fmt.Errorf("open %s: alternate %s: %w", abs, dir, err)
		}
		backends = append(backends, &backend{st: st, fs: st, objDir: dir, packs: packFingerprint(dir), packed: m})
	}

	s := newStore(abs, canonical(objDir), backends, primary, opts)
	s.gitDir, s.config, s.configErr = common, cfg, cfgErr
	s.openLazy(opts)
	return s, nil
}

// closeBackends releases what Open opened before it failed.
func closeBackends(bs []*backend) {
	for _, b := range bs {
		if b.fs != nil {
			_ = b.fs.Close()
		}
		if b.packed != nil {
			_ = b.packed.Close()
		}
	}
}

// findGitDir returns the git directory for dir and its common directory
// (the same unless dir is a linked worktree).
func findGitDir(dir string) (gitdir, common string, err error) {
	dotGit := filepath.Join(dir, ".git")
	fi, statErr := os.Stat(dotGit)
	switch {
	case statErr == nil && fi.IsDir():
		gitdir = dotGit
	case statErr == nil:
		// A gitfile, as written for submodules and linked worktrees.
		gitdir, err = readGitFile(dotGit)
		if err != nil {
			return "", "", err
		}
	default:
		if common, ok := isGitDir(dir); ok {
			return dir, common, nil
		}
		return "", "", fmt.Errorf("not a git repository (looked for %s, %s + %s)",
			dotGit, filepath.Join(dir, "objects"), filepath.Join(dir, "HEAD"))
	}
	common, ok := isGitDir(gitdir)
	if !ok {
		return "", "", fmt.Errorf("%s is not a git directory (looked for %s + %s)",
			gitdir, filepath.Join(gitdir, "objects"), filepath.Join(gitdir, "HEAD"))
	}
	return gitdir, common, nil
}

func readGitFile(name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	target = strings.TrimSpace(target)
	if !ok || target == "" {
		return "", fmt.Errorf("%s: not a gitfile (want \"gitdir: <path>\")", name)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(name), target)
	}
	if !isDir(target) {
		return "", fmt.Errorf("%s points to %s: no such directory", name, target)
	}
	return filepath.Clean(target), nil
}

// isGitDir reports whether dir holds HEAD and an object store (its own, or
// the common dir's for a linked worktree), and returns the common dir.
func isGitDir(dir string) (common string, ok bool) {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || fi.IsDir() {
		return "", false
	}
	common = dir
	if b, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		common = filepath.Clean(c)
	}
	return common, isDir(filepath.Join(common, "objects"))
}

// checkConfig refuses repositories go-git cannot read correctly, so the
// user gets a clear message instead of "object not found" later. git reads
// extensions from the repository's own config only. (A nil cfg, one that
// did not parse, is no reason to refuse: objects are read without it.)
func checkConfig(cfg *Config) error {
	local := cfg.In(ScopeLocal)
	if v, _ := local.Get("extensions", "", "objectformat"); v != "" && !strings.EqualFold(v, "sha1") {
		return fmt.Errorf("object format %s is not supported (only sha1)", strings.ToLower(v))
	}
	if v, _ := local.Get("extensions", "", "refstorage"); v != "" && !strings.EqualFold(v, "files") {
		return fmt.Errorf("ref storage %s is not supported (only files)", strings.ToLower(v))
	}
	return nil
}

// alternates returns the object directories objDir borrows from,
// recursively and without duplicates, as git reads objects/info/alternates.
func alternates(objDir string) ([]string, error) {
	seen := map[string]bool{canonical(objDir): true}
	var out []string
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		file := filepath.Join(dir, "info", "alternates")
		f, err := os.Open(file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			if line[0] == '"' {
				if u, err := strconv.Unquote(line); err == nil {
					line = u
				}
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(dir, line) // relative to the objects dir, as in git
			}
			alt := filepath.Clean(line)
			if !isDir(alt) {
				return fmt.Errorf("alternate object directory %s (from %s): no such directory", alt, file)
			}
			if filepath.Base(alt) != "objects" {
				// go-git's store is rooted at a git dir and appends "objects".
				return fmt.Errorf("alternate object directory %s (from %s): only directories named \"objects\" are supported", alt, file)
			}
			if seen[canonical(alt)] {
				continue
			}
			seen[canonical(alt)] = true
			out = append(out, alt)
			if depth < maxAlternateDepth {
				if err := walk(alt, depth+1); err != nil {
					return err
				}
			}
		}
		return sc.Err()
	}
	if err := walk(objDir, 1); err != nil {
		return nil, err
	}
	return out, nil
}

// packFingerprint names the pack indexes present, so a miss can tell
// whether git repacked under us (gc moves loose objects into new packs).
func packFingerprint(objDir string) string {
	ents, err := os.ReadDir(filepath.Join(objDir, "pack"))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".idx") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}

// canonical is an absolute, cleaned, symlink-free path: a stable identity.
func canonical(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Clean(p)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
