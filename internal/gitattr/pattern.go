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
