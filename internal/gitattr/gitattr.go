// Package gitattr is git's attribute machinery for the merge: which
// .gitattributes apply to a path of a tree, as a checkout of that tree has
// them, and what they make of a content merge (merge=..., -merge, the
// binary macro, conflict-marker-size, merge.NAME drivers and merge.default
// from the repository's config). It reads through tree.Store and the
// repository's own files; running a driver is the merge's (internal/mergeort).
//
// What .gitattributes and the repository's config make of
// a content merge (a path both sides changed, merged line by line), as git 2.39's ll_merge does.
//
//   - merge unset (-merge, or the built-in "binary" macro): ours is left,
//     conflicted (ll_binary_merge). merge=binary too, unless a driver of
//     that name is configured.
//   - merge set, unspecified, merge=text, or merge=NAME with no
//     merge.NAME.* in the config: the normal text merge. merge.default
//     names the driver of a path with no merge attribute, as in git.
//   - merge=union: merge3 with FavorUnion (never conflicted, unless a side
//     is binary: then binary, as in git).
//   - merge=NAME with merge.NAME.* configured (a configured name wins over
//     the built-in ones, as in git): merge.NAME.driver runs through /bin/sh
//     with %O %A %B (temporary files named .merge_file_XXXXXX, relative to
//     its working directory, a private temporary directory), %L (the marker
//     size), %P (the path, shell-quoted) and %% (git 2.39 has no %S %X %Y:
//     they stay as typed). Exit status 0 is clean, anything else conflicted
//     (a signal too); the result is %A's content afterwards. It is killed
//     (its whole process group) after 60 s (mergeort.Options.DriverTimeout), which is an error, as
//     is a driver that cannot start, leaves no %A, or has no driver line.
//   - conflict-marker-size=N: the length of conflict markers (atoi; 0 or
//     less is the default, 7).
//
// Which attributes: those `git merge` would see in a checkout of OURS (gitnfs
// serves an object store, so there is no work tree to read): the
// .gitattributes blobs of the OURS tree along the path (root first, deeper
// ones override), then $GIT_DIR/info/attributes over them all, with the
// built-in "[attr]binary -diff -merge -text" below, and [attr] macros from
// the root .gitattributes and info/attributes. Global and system attribute
// files (core.attributesFile, $XDG_CONFIG_HOME/git/attributes,
// /etc/gitattributes) are not read, nor are global or system config files:
// drivers and merge.default come from $GIT_DIR/config alone (include.path
// not followed). Matching is case-sensitive (core.ignoreCase is ignored).
// A .gitattributes that is a symlink or a submodule is not read (git does
// not follow in-tree symlinks either).
//
// Errors: a .gitattributes or info/attributes above MaxFileSize bytes
// (git reads up to 100 MiB), or one that cannot be read, or an unparsable
// config, makes every content merge whose attributes depend on it fail
// with an error naming the file, every time (never cached as "no
// attributes": serving bytes git would not write is worse than an I/O
// error on the few paths concerned). Lines git warns about and skips
// (negative patterns, [attr] outside the root, invalid names, lines of 2048
// bytes or more) are skipped silently.
//
// info/attributes and the config are read once per Checkout, on its first
// content merge (like the trees, they are a snapshot).
//
// Cost: a path that is not a content merge never looks at attributes. A
// content merge looks up its directory in a per-Checkout map; the first time a
// directory is seen, its OURS tree is listed (one listing lookup: the
// parent's listing is kept, weakly, from when the parent was seen) to find
// its .gitattributes. With no .gitattributes on the way, no
// info/attributes and no merge.default, that is all, without allocating,
// and the merge's cache key is the one it has without attributes. Parsed files are cached per
// Checkout by blob id, keeping only the lines that can change a merge.
package gitattr

const (
	// MaxFileSize bounds an attributes file gitnfs reads (git reads up to
	// 100 MiB; one that big in a tree is an attack, not a configuration).
	MaxFileSize = 100 << 10
	// attrMaxLineLength is git's ATTR_MAX_LINE_LENGTH: longer lines are
	// ignored.
	attrMaxLineLength = 2048
	// maxMarkerSize bounds conflict-marker-size (git has no bound; a
	// bigger value is refused rather than written).
	maxMarkerSize = 1 << 20
)

// MergeKind is the low-level merge a path's attributes select.
type MergeKind uint8

const (
	Text     MergeKind = iota // the normal content merge (the zero value)
	Binary                    // ours left, conflicted
	Union                     // both sides' lines, never conflicted
	External                  // a configured merge.NAME.driver
)

// Merge is what the attributes decide for one content merge; the zero
// value is the merge without attributes.
type Merge struct {
	Kind   MergeKind
	Marker int     // conflict-marker-size; 0 is git's default (7)
	Driver *Driver // for External
}

// MarkerSize is the effective conflict-marker length.
func (a Merge) MarkerSize() int {
	if a.Marker > 0 {
		return a.Marker
	}
	return 7
}

// Driver is one [merge "NAME"] section of the config.
type Driver struct {
	Name    string
	Cmdline string // merge.NAME.driver
	HasCmd  bool   // false: the section sets no driver line (running it is an error)
}
