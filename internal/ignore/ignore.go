// Package ignore decides which untracked paths git leaves out of a work
// tree's status and of `git add -A`: gitignore(5) as git 2.39's dir.c
// applies it. It knows nothing of where the rules live; callers hand it
// the exclude files and a way to read each directory's .gitignore.
//
// go-git's plumbing/format/gitignore is not used: it differs from git in
// ways its tests pin down (TestGoGitMatcherDiffersFromGit): it lets a
// negation re-include a path under an excluded directory, matches a
// slash-less pattern against every component instead of the basename,
// lets "foo/**" match foo itself, never matches a "**" inside a
// component, and stops "**/" at its first candidate without backtracking.
// Working around all of that would leave nothing of it; porting git's
// matcher (wildmatch.go) is smaller and agrees by construction.
package ignore

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gitnfs/gitnfs/internal/wildmatch"
)

// pattern is one rule line, parsed as parse_path_pattern does.
type pattern struct {
	// Pattern is the text without "!" and the trailing "/". git compares
	// its wildcard-free prefix as a string and wildmatches only the rest,
	// which is not always the same as matching the whole: "/a**/b"
	// matches "ab" because "**/b" then starts the pattern.
	wildmatch.Pattern
	negative  bool // "!pattern": re-include
	mustBeDir bool // "pattern/": directories only
	line      int
}

// List is the rules of one file, in file order. Base is the directory
// they are relative to ("" for the top, else "dir/sub" without slashes at
// either end).
type List struct {
	Source string
	Base   string
	rules  []pattern
}

// Parse reads gitignore lines as git does: a UTF-8 BOM is skipped, CRLF
// is accepted, a line starting with "#" is a comment, unescaped trailing
// spaces are dropped (leading ones are kept), "\" escapes the next byte.
func Parse(source, base string, data []byte) *List {
	l := &List{Source: source, Base: strings.Trim(base, "/")}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if i := strings.IndexByte(line, 0); i >= 0 {
			line = line[:i] // git reads each line as a C string
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if p, ok := parsePattern(trimTrailingSpaces(line)); ok {
			p.line = n + 1
			l.rules = append(l.rules, p)
		}
	}
	return l
}

// trimTrailingSpaces drops trailing spaces unless escaped by "\".
func trimTrailingSpaces(s string) string {
	end := -1 // start of the current run of spaces
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if end < 0 {
				end = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			end = -1
		default:
			end = -1
		}
	}
	if end >= 0 {
		return s[:end]
	}
	return s
}

func parsePattern(s string) (pattern, bool) {
	var p pattern
	if strings.HasPrefix(s, "!") {
		p.negative = true
		s = s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.mustBeDir = true
		s = s[:len(s)-1]
	}
	if s == "" {
		return p, false // matches nothing in git either
	}
	p.Pattern = wildmatch.NewPattern(s)
	return p, true
}

// match reports whether p matches path (relative to the top) given that
// the rule comes from a file whose directory is base.
func (p *pattern) match(base, path, name string, isDir bool) bool {
	if p.mustBeDir && !isDir {
		return false
	}
	return p.Pattern.Match(base, path, name)
}

// last is the list's last rule matching path, or nil: later lines win.
func (l *List) last(path, name string, isDir bool) *pattern {
	for i := len(l.rules) - 1; i >= 0; i-- {
		if l.rules[i].match(l.Base, path, name, isDir) {
			return &l.rules[i]
		}
	}
	return nil
}

// Reader returns the .gitignore of directory dir ("" for the top), nil
// when there is none.
type Reader func(dir string) ([]byte, error)

// Matcher answers for one work tree. Not safe for concurrent use: it
// caches each directory's rules and verdict as it goes.
type Matcher struct {
	read  Reader
	files []*List          // exclude files, lowest precedence first
	dirs  map[string]*List // each directory's .gitignore, read once
	// excludedDir caches whether a directory is excluded, itself or by
	// an ancestor: then everything beneath it is, whatever it says.
	excludedDir map[string]bool
}

// New makes a matcher reading .gitignore files through read (nil: none)
// over the exclude files given lowest precedence first (git's order:
// core.excludesFile, then $GIT_DIR/info/exclude). Every .gitignore wins
// over every exclude file, a deeper one over a shallower one.
func New(read Reader, files ...*List) *Matcher {
	return &Matcher{read: read, files: files, dirs: map[string]*List{}, excludedDir: map[string]bool{}}
}

// Ignored reports whether git would ignore the untracked path (relative
// to the top, slash-separated) of the given type. Whether a path is
// tracked is the caller's business: git never ignores a tracked path.
func (m *Matcher) Ignored(path string, isDir bool) (bool, error) {
	path = strings.Trim(path, "/")
	if path == "" {
		return false, nil // the top is never ignored
	}
	parent, name := split(path)
	if parent != "" {
		ex, err := m.dirExcluded(parent)
		if err != nil || ex {
			return ex, err
		}
	}
	p, err := m.lastMatch(parent, path, name, isDir)
	return p != nil && !p.negative, err
}

// dirExcluded: dir or one of its ancestors is excluded. Like git's
// prep_exclude, a directory is judged by the rules of its ancestors only,
// and an excluded directory's .gitignore is never read: no rule can
// re-include what lies beneath it.
func (m *Matcher) dirExcluded(dir string) (bool, error) {
	if ex, ok := m.excludedDir[dir]; ok {
		return ex, nil
	}
	parent, name := split(dir)
	ex := false
	if parent != "" {
		var err error
		if ex, err = m.dirExcluded(parent); err != nil {
			return false, err
		}
	}
	if !ex {
		p, err := m.lastMatch(parent, dir, name, true)
		if err != nil {
			return false, err
		}
		ex = p != nil && !p.negative
	}
	m.excludedDir[dir] = ex
	return ex, nil
}

// lastMatch is the deciding rule for path, whose parent directory is dir
// (not excluded): the .gitignore files from dir up to the top, then the
// exclude files from the highest precedence down; in each, the last
// matching line.
func (m *Matcher) lastMatch(dir, path, name string, isDir bool) (*pattern, error) {
	for d := dir; ; {
		l, err := m.gitignore(d)
		if err != nil {
			return nil, err
		}
		if p := l.last(path, name, isDir); p != nil {
			return p, nil
		}
		if d == "" {
			break
		}
		d, _ = split(d)
	}
	for i := len(m.files) - 1; i >= 0; i-- {
		if p := m.files[i].last(path, name, isDir); p != nil {
			return p, nil
		}
	}
	return nil, nil
}

func (m *Matcher) gitignore(dir string) (*List, error) {
	if l, ok := m.dirs[dir]; ok {
		return l, nil
	}
	var data []byte
	if m.read != nil {
		var err error
		if data, err = m.read(dir); err != nil {
			return nil, fmt.Errorf("read %s: %w", join(dir, ".gitignore"), err)
		}
	}
	l := Parse(join(dir, ".gitignore"), dir, data)
	m.dirs[dir] = l
	return l, nil
}

// split cuts "a/b/c" into "a/b" and "c" (and "c" into "" and "c").
func split(path string) (dir, name string) {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// MacOSMetadata is the rules gitnfs adds below every other exclude file:
// what a macOS NFS client writes next to the files a user touches. NFSv3
// has no extended attributes, so the client stores a file's resource fork
// and attributes in an AppleDouble "._name" beside it, and Finder drops a
// ".DS_Store" in every directory it opens. git, which never sees such a
// client, would add both; a commit of a sandbox must not carry them. The
// list has the lowest precedence, so any ignore file can take a name back
// ("!._keep" or "!.DS_Store"), and tracked paths are never ignored.
func MacOSMetadata() *List {
	return Parse("gitnfs built-in (macOS metadata)", "", []byte(".DS_Store\n._*\n"))
}
