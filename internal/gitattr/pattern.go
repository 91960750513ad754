package gitattr

import "strings"

// attrPattern is a gitattributes pattern (dir.c's parse_path_pattern).
type attrPattern struct {
	pat      string
	nodir    bool // no '/': matches the basename at any depth
	endsWith bool // "*literal"
	prefix   int  // length of the leading part without wildcards
}

// parsePattern parses a pattern; ok is false for a pattern that never
// matches a file: a negative one (git ignores those) or one that only
// matches directories (trailing '/').
func parsePattern(p string) (attrPattern, bool) {
	if strings.HasPrefix(p, "!") || strings.HasSuffix(p, "/") {
		return attrPattern{}, false
	}
	a := attrPattern{pat: p, nodir: !strings.Contains(p, "/"), prefix: cspan(p, "*?[\\")}
	a.endsWith = strings.HasPrefix(p, "*") && !strings.ContainsAny(p[1:], "*?[\\")
	return a, true
}

// match is path_matches for a file path whose basename is base, against a
// pattern of the attributes file in directory dir.
func (a *attrPattern) match(path, base, dir string) bool {
	if a.nodir {
		switch {
		case a.prefix == len(a.pat):
			return a.pat == base
		case a.endsWith:
			return strings.HasSuffix(base, a.pat[1:])
		}
		return wildmatch(a.pat, base, false)
	}
	// match_pathname: the pattern is relative to dir.
	pat, prefix := a.pat, a.prefix
	if pat[0] == '/' {
		pat, prefix = pat[1:], prefix-1
	}
	if len(path) < len(dir)+1 || (dir != "" && path[len(dir)] != '/') || path[:len(dir)] != dir {
		return false
	}
	name := path
	if dir != "" {
		name = path[len(dir)+1:]
	}
	if prefix > 0 {
		if prefix > len(name) || pat[:prefix] != name[:prefix] {
			return false
		}
		pat, name = pat[prefix:], name[prefix:]
		if pat == "" && name == "" {
			return true
		}
	}
	return wildmatch(pat, name, true)
}

// wildmatch is git's wildmatch (without WM_CASEFOLD); pathname is
// WM_PATHNAME ('*' and '?' do not match '/', "**/" matches directories).
func wildmatch(pattern, text string, pathname bool) bool {
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

// dowild is wildmatch.c's dowild, with indices for pointers (0 past the
// end, as C's terminating NUL).
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
			continue
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			pi++
			if at(p, pi) == '*' {
				prev := pi - 2
				for pi++; at(p, pi) == '*'; pi++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prev < 0 || p[prev] == '/') &&
					(pi >= len(p) || p[pi] == '/' || (p[pi] == '\\' && at(p, pi+1) == '/')):
					if at(p, pi) == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if pi >= len(p) {
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				ti += slash
				continue // the slash is matched by the loop's increment
			}
			for {
				if ti >= len(text) {
					break
				}
				if !isGlobSpecial(p[pi]) {
					pch = p[pi]
					for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != pch {
						ti++
					}
					if at(text, ti) != pch {
						return wmNoMatch
					}
				}
				tch = at(text, ti)
				if m := dowild(p[pi:], text[ti:], pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			pch = at(p, pi)
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
					return wmAbortAll
				}
				switch {
				case pch == '\\':
					pi++
					pch = at(p, pi)
					if pi >= len(p) {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				case pch == '-' && prevCh != 0 && pi+1 < len(p) && p[pi+1] != ']':
					pi++
					pch = p[pi]
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pi >= len(p) {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prevCh {
						matched = true
					}
					pch = 0 // so that prevCh is 0
				case pch == '[' && at(p, pi+1) == ':':
					pi += 2
					s := pi
					for pi < len(p) && p[pi] != ']' {
						pi++
					}
					if pi >= len(p) {
						return wmAbortAll
					}
					i := pi - s - 1
					if i < 0 || p[pi-1] != ':' {
						// No ":]": a plain '[' in the set.
						pi = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
						break
					}
					in, ok := charClass(p[s:s+i], tch)
					if !ok {
						return wmAbortAll
					}
					if in {
						matched = true
					}
					pch = 0
				default:
					if tch == pch {
						matched = true
					}
				}
				prevCh = pch
				pi++
				pch = at(p, pi)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tch != pch {
				return wmNoMatch
			}
			continue
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass is a [:class:] of wildmatch, with git's ASCII-only ctype.
func charClass(class string, c byte) (in, ok bool) {
	lower := 'a' <= c && c <= 'z'
	upper := 'A' <= c && c <= 'Z'
	digit := '0' <= c && c <= '9'
	switch class {
	case "alnum":
		return lower || upper || digit, true
	case "alpha":
		return lower || upper, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return lower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !lower && !upper && !digit, true
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r'), true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}
