package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitnfs/gitnfs/internal/mergefs"
	"github.com/gitnfs/gitnfs/internal/mergeort"
	"github.com/gitnfs/gitnfs/merge3"
	"github.com/gitnfs/gitnfs/tree"
)

type conflictsFlags struct {
	repo, rev, merge, base string
	style                  string
	dirRenames             string
	nameOnly               bool
}

func newConflicts() *cobra.Command {
	var f conflictsFlags
	cmd := &cobra.Command{
		Use:   "conflicts --merge THEIRS",
		Short: "List the conflicts of merging a revision, exit 1 if there are any",
		Long: `conflicts merges --merge THEIRS into --rev OURS exactly as the merge view of
"gitnfs serve --merge" serves it (git merge-tree's merge, renames and
directory renames included) and lists every conflicted path with its kinds:
content, add/add, modify/delete, file/directory, mode, binary, distinct types,
submodule, rename/delete, rename/rename, file location. A file
that a directory pushed aside is listed under the name it is served at,
path~BRANCH. Files both sides changed are merged by content to know whether
they merge cleanly; nothing is written anywhere.

The exit status is 1 when there is any conflict, 0 when the merge is clean
(so it can gate CI) and 2 on an error (bad flag, revision or repository). The
base is the merge base unless --base is given; several merge bases (a
criss-cross history) are merged into a virtual base first, as git does.`,
		Example: `  gitnfs conflicts --merge origin/feature
  gitnfs conflicts --repo /srv/repo.git --rev main --merge topic --name-only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runConflicts(cmd, f)
			var ee exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return failed(cmd, err)
		},
	}
	// Status 1 means "conflicts": a bad flag or repository must not look
	// like one to a CI gate.
	cmd.SetFlagErrorFunc(failed)
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", ".", "repository: a work tree, a .git directory or a bare repository")
	fl.StringVar(&f.rev, "rev", "HEAD", "our side of the merge")
	fl.StringVar(&f.merge, "merge", "", "the revision to merge into --rev (required)")
	fl.StringVar(&f.base, "base", "", "the merge base (default: computed as git merge-base does)")
	fl.StringVar(&f.style, "conflict-style", "diff3", "conflict markers: diff3, merge or zdiff3")
	fl.StringVar(&f.dirRenames, "directory-renames", "conflict", "a file added into a directory the other side renamed: moved and conflicted (conflict), moved (true) or left (false)")
	fl.BoolVar(&f.nameOnly, "name-only", false, "print the conflicted paths only")
	return cmd
}

// failed reports err and ends with status 2.
func failed(cmd *cobra.Command, err error) error {
	fmt.Fprintln(cmd.ErrOrStderr(), "gitnfs:", err)
	return exitError{2}
}

func runConflicts(cmd *cobra.Command, f conflictsFlags) error {
	if f.merge == "" {
		return fmt.Errorf("--merge THEIRS is required: the revision to merge into --rev")
	}
	style, err := merge3.ParseStyle(f.style)
	if err != nil {
		return fmt.Errorf("--conflict-style: %w", err)
	}
	store, err := tree.Open(f.repo, tree.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	ours, theirs, base, err := mergefs.ResolveMerge(store, f.rev, f.merge, f.base, mergefs.Options{Merge: mergeort.Options{Style: style}})
	if err != nil {
		return err
	}
	dirRenames, err := mergeort.ParseDirectoryRenames(f.dirRenames)
	if err != nil {
		return fmt.Errorf("--directory-renames: %w", err)
	}
	fsys := mergefs.New(store, ours, theirs, base, mergefs.Options{Merge: mergeort.Options{Style: style, DirectoryRenames: dirRenames}})
	cs, err := fsys.Conflicts()
	if err != nil {
		return err
	}
	if err := mergeort.WriteConflicts(cmd.OutOrStdout(), cs, f.nameOnly); err != nil {
		return err
	}
	unclean := fsys.Unclean()
	for _, m := range unclean {
		fmt.Fprintln(cmd.ErrOrStderr(), "gitnfs:", m)
	}
	if len(cs) > 0 || len(unclean) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "gitnfs: %d conflicted paths merging %s into %s (base %s)\n",
			len(cs), f.merge, f.rev, base.Rev)
		return exitError{1}
	}
	return nil
}
