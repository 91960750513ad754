package gitattr

import (
	"strings"

	"github.com/gitnfs/gitnfs/internal/wildmatch"
)

// attrPattern is a gitattributes pattern (dir.c's parse_path_pattern).
type attrPattern struct{ wildmatch.Pattern }

// parsePattern parses a pattern; ok is false for a pattern that never
// matches a file: a negative one (git ignores those) or one that only
// matches directories (trailing '/').
func parsePattern(p string) (attrPattern, bool) {
	if strings.HasPrefix(p, "!") || strings.HasSuffix(p, "/") {
		return attrPattern{}, false
	}
	return attrPattern{wildmatch.NewPattern(p)}, true
}

// match is path_matches for a file path whose basename is base, against a
// pattern of the attributes file in directory dir.
func (a *attrPattern) match(path, base, dir string) bool { return a.Match(dir, path, base) }
