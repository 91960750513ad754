package main

import (
	"github.com/gitnfs/gitnfs/internal/ignore"
)

// ignoreRules are the rules git would apply to the overlay's merged view
// as a work tree: the view's own .gitignore files (the base's, as the
// overlay left them or wrote them), $GIT_DIR/info/exclude and
// core.excludesFile, and below all of them gitnfs's macOS metadata rules.
func ignoreRules(o *overlayOpened) (*ignore.Matcher, error) {
	files, err := o.store.ExcludeFiles()
	if err != nil {
		return nil, err
	}
	lists := []*ignore.List{ignore.MacOSMetadata()}
	for _, f := range files {
		lists = append(lists, ignore.Parse(f.Path, "", f.Data))
	}
	return ignore.New(o.ov.Gitignore, lists...), nil
}

// ignoreHelp is what status and commit --help say about ignored paths.
const ignoreHelp = `Ignored paths are left out as git add -A leaves them out of a work tree:
an untracked path (one the revision has no file at) that the .gitignore
files of the merged view, $GIT_DIR/info/exclude or core.excludesFile
(default $XDG_CONFIG_HOME/git/ignore, else ~/.config/git/ignore) ignore, by
git's rules and precedence. A tracked path is never ignored. Below all of
those, gitnfs ignores what a macOS NFS client writes beside a user's files:
.DS_Store and AppleDouble ._* files (git would add them; a sandbox's commit
must not carry them). Take one back with a negation in any ignore file,
e.g. "!._keep" in .git/info/exclude.`
