// Package wildmatch is git's wildmatch.c (git 2.39), ported, with indices
// for pointers (0 past the end stands for C's terminating NUL): the matcher
// behind every gitattributes and gitignore pattern (internal/gitattr,
// internal/ignore), so that corner cases agree with git rather than with
// path.Match: "**" spans directories only as a whole component, "[!x]" and
// "[^x]" both negate, POSIX classes like "[[:digit:]]" work, and a
// malformed class fails the match instead of returning an error.
//
// Why a port and not go-git's matchers. gitattributes: go-git's
// plumbing/format/gitattributes matcher
// one matches each path component with path/filepath.Match, which agrees
// with git check-attr on anchoring, "**" and escapes but not on bracket
// expressions. Measured with TestAttributeValuesMatchCheckAttr (66 paths),
// it gets 6 wrong: "[!x]" is no negation to filepath.Match (only "[^x]"
// is), POSIX classes ("[[:digit:]]", "[[:alpha:][:punct:]]") are unknown
// to it, and a "]" first in a set ("[]]") is ErrBadPattern there, so the
// pattern never matches. A bracket pattern needs the port anyway, and one
// matcher for every line keeps the lines' precedence exact, so the port
// serves all patterns. (go-git also splits the path on every match, and
// this lookup allocates nothing.) gitignore: go-git's
// plumbing/format/gitignore differs from git check-ignore in six ways that
// internal/ignore's TestGoGitMatcherDiffersFromGit shows (among them "**"
// inside a component, backtracking on "**/", "[!x]").
package wildmatch

import "strings"

// Match is git's wildmatch (without WM_CASEFOLD); pathname is
// WM_PATHNAME ('*', '?' and classes do not match '/', "**/" matches
// directories).
func Match(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// dowild is wildmatch.c's dowild: the pattern p against text, one
// pattern character at a time; '*' (matchStar) and '[' (matchBracket) are
// handled apart.
func dowild(p, text string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		tch := at(text, ti)
		if ti >= len(text) && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			pi++
			if tch != at(p, pi) {
				return wmNoMatch
			}
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
		case '*':
			var result int
			var done bool
			if pi, ti, result, done = matchStar(p, pi, text, ti, pathname); done {
				return result
			}
		case '[':
			end, in, ok := matchBracket(p, pi, tch)
			if !ok {
				return wmAbortAll
			}
			if !in || (pathname && tch == '/') {
				return wmNoMatch
			}
			pi = end
		default:
			if tch != pch {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// matchStar handles the '*' (or run of '*') at p[pi] against text[ti:]:
// done with the result when the star decides the match, else the
// positions dowild goes on from (a '*' that cannot cross a slash, followed
// by '/', skips to text's next slash).
func matchStar(p string, pi int, text string, ti int, pathname bool) (npi, nti, result int, done bool) {
	pi++
	matchSlash := !pathname
	if at(p, pi) == '*' {
		prev := pi - 2
		for pi++; at(p, pi) == '*'; pi++ {
		}
		switch {
		case !pathname:
			matchSlash = true
		case (prev < 0 || p[prev] == '/') &&
			(pi >= len(p) || p[pi] == '/' || (p[pi] == '\\' && at(p, pi+1) == '/')):
			// "**" as a whole component: any number of directories.
			if at(p, pi) == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
				return 0, 0, wmMatch, true
			}
			matchSlash = true
		default:
			matchSlash = false
		}
	}
	if pi >= len(p) {
		if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
			return 0, 0, wmNoMatch, true
		}
		return 0, 0, wmMatch, true
	}
	if !matchSlash && p[pi] == '/' {
		slash := strings.IndexByte(text[ti:], '/')
		if slash < 0 {
			return 0, 0, wmNoMatch, true
		}
		return pi, ti + slash, 0, false // the slash is matched by dowild's increment
	}
	return 0, 0, starScan(p[pi:], text, ti, matchSlash, pathname), true
}

// starScan tries rest (what follows a '*') at each position of text from
// ti on, as far as the star may reach.
func starScan(rest, text string, ti int, matchSlash, pathname bool) int {
	for ti < len(text) {
		if !isGlobSpecial(rest[0]) {
			// A literal next: skip to where it occurs.
			pch := rest[0]
			for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != pch {
				ti++
			}
			if at(text, ti) != pch {
				return wmNoMatch
			}
		}
		tch := at(text, ti)
		if m := dowild(rest, text[ti:], pathname); m != wmNoMatch {
			if !matchSlash || m != wmAbortToStarStar {
				return m
			}
		} else if !matchSlash && tch == '/' {
			return wmAbortToStarStar
		}
		ti++
	}
	return wmAbortAll
}

// matchBracket matches tch against the bracket expression at p[pi]: end
// is the index of its closing ']', in whether tch is in the set (negation
// applied); ok is false for a malformed expression (git aborts the match).
func matchBracket(p string, pi int, tch byte) (end int, in, ok bool) {
	pi++
	pch := at(p, pi)
	if pch == '^' {
		pch = '!'
	}
	negated := pch == '!'
	if negated {
		pi++
		pch = at(p, pi)
	}
	var prevCh byte
	matched := false
	for {
		if pi >= len(p) {
			return 0, false, false
		}
		var hit bool
		if pi, pch, hit, ok = bracketItem(p, pi, pch, prevCh, tch); !ok {
			return 0, false, false
		}
		matched = matched || hit
		prevCh = pch
		pi++
		if pch = at(p, pi); pch == ']' {
			return pi, matched != negated, true
		}
	}
}

// bracketItem matches tch against the item of a bracket expression at
// p[pi] (pch): an escaped character, a range from prevCh, a [:class:] or a
// character. It returns the item's last index and the character a range
// after it would start from (0 after a range or a class).
func bracketItem(p string, pi int, pch, prevCh, tch byte) (end int, last byte, hit, ok bool) {
	switch {
	case pch == '\\':
		pi++
		pch = at(p, pi)
		if pi >= len(p) {
			return 0, 0, false, false
		}
		return pi, pch, tch == pch, true
	case pch == '-' && prevCh != 0 && pi+1 < len(p) && p[pi+1] != ']':
		pi++
		pch = p[pi]
		if pch == '\\' {
			pi++
			pch = at(p, pi)
			if pi >= len(p) {
				return 0, 0, false, false
			}
		}
		return pi, 0, tch <= pch && tch >= prevCh, true
	case pch == '[' && at(p, pi+1) == ':':
		return bracketClass(p, pi, tch)
	}
	return pi, pch, tch == pch, true
}

// bracketClass is a "[:name:]" at p[pi]; without its ":]" the '[' is a
// plain character of the set.
func bracketClass(p string, pi int, tch byte) (end int, last byte, hit, ok bool) {
	pi += 2
	s := pi
	for pi < len(p) && p[pi] != ']' {
		pi++
	}
	if pi >= len(p) {
		return 0, 0, false, false
	}
	i := pi - s - 1
	if i < 0 || p[pi-1] != ':' {
		return s - 2, '[', tch == '[', true
	}
	in, known := charClass(p[s:s+i], tch)
	if !known {
		return 0, 0, false, false
	}
	return pi, 0, in, true
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return isLower(c) || isUpper(c) }

// charClasses are wildmatch's [:class:]es, with git's ASCII-only ctype.
var charClasses = map[string]func(c byte) bool{
	"alnum":  func(c byte) bool { return isAlpha(c) || isDigit(c) },
	"alpha":  isAlpha,
	"blank":  func(c byte) bool { return c == ' ' || c == '\t' },
	"cntrl":  func(c byte) bool { return c < 0x20 || c == 0x7f },
	"digit":  isDigit,
	"graph":  func(c byte) bool { return c > 0x20 && c < 0x7f },
	"lower":  isLower,
	"print":  func(c byte) bool { return c >= 0x20 && c < 0x7f },
	"punct":  func(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c) },
	"space":  func(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') },
	"upper":  isUpper,
	"xdigit": func(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') },
}

// charClass reports whether c is in the class; known is false for a name
// wildmatch does not know (git then aborts the match).
func charClass(class string, c byte) (in, known bool) {
	f, known := charClasses[class]
	if !known {
		return false, false
	}
	return f(c), true
}

// simpleLength is git's simple_length (dir.c): how many leading bytes of
// pattern hold no wildcard, the part git compares as plain text before it
// wildmatches the rest (so that "/a**/[ab]" matches "ab", as git does).
func simpleLength(pattern string) int {
	for i := 0; i < len(pattern); i++ {
		if isGlobSpecial(pattern[i]) {
			return i
		}
	}
	return len(pattern)
}

// Pattern is one gitignore or gitattributes pattern as dir.c keeps it
// (parse_path_pattern), after the caller has taken off what its file kind
// adds ("!" and a trailing "/" for gitignore): both files match a path the
// same way, with match_basename and match_pathname.
type Pattern struct {
	Text string
	// Basename: no "/" in the pattern, so it matches the last component at
	// any depth (PATTERN_FLAG_NODIR).
	Basename bool
	// prefix is the wildcard-free leading length (nowildcardlen); endsWith
	// is "*literal" (PATTERN_FLAG_ENDSWITH), a suffix test.
	prefix   int
	endsWith bool
}

// NewPattern is text as a pattern.
func NewPattern(text string) Pattern {
	p := Pattern{Text: text, Basename: !strings.Contains(text, "/"), prefix: simpleLength(text)}
	p.endsWith = strings.HasPrefix(text, "*") && simpleLength(text[1:]) == len(text)-1
	return p
}

// Match is path_matches: whether p, from the rules file of directory dir
// ("" the top), matches path (relative to the top), whose last component
// is name.
func (p Pattern) Match(dir, path, name string) bool {
	if p.Basename {
		switch {
		case p.prefix == len(p.Text):
			return name == p.Text
		case p.endsWith:
			return strings.HasSuffix(name, p.Text[1:])
		}
		return Match(p.Text, name, false)
	}
	// match_pathname: the pattern is relative to dir, and a leading "/"
	// only anchors, which every pattern with a slash is.
	pat, prefix := p.Text, p.prefix
	if pat[0] == '/' {
		pat, prefix = pat[1:], prefix-1
	}
	if len(path) < len(dir)+1 || (dir != "" && path[len(dir)] != '/') || path[:len(dir)] != dir {
		return false
	}
	rel := path
	if dir != "" {
		rel = path[len(dir)+1:]
	}
	if prefix > 0 {
		if prefix > len(rel) || pat[:prefix] != rel[:prefix] {
			return false
		}
		pat, rel = pat[prefix:], rel[prefix:]
		if pat == "" && rel == "" {
			return true
		}
	}
	return Match(pat, rel, true)
}
