package worktree

import (
	"strings"
)

// WriteConfig writes the worktree's own config (worktrees/NAME/config.worktree):
// git's fsmonitor hook (protocol version 2) and fsmonitor.allowRemote (newer
// gits refuse a monitor on a network filesystem without it), and
// core.bare=false.
//
// git 2.39 reads this file only when the repository's shared config sets
// extensions.worktreeConfig (TestWorktreeConfigNeedsTheSharedExtension):
// there is no per-worktree place git reads without it, so turning the hook
// on for one export is that one shared setting, which this package does
// not make. core.bare=false is here because, once the extension is on, a
// bare repository's core.bare=true applies to every linked worktree, this
// one included ("this operation must be run in a work tree"); the user's
// own linked worktrees of a bare repository then need core.bare moved from
// config to the main worktree's config.worktree, as git's own
// init_worktree_config (git sparse-checkout) moves it.
func (a *Admin) WriteConfig(fsmonitorHook string) error {
	if fsmonitorHook == "" {
		return a.WriteHookConfig(nil)
	}
	return a.WriteHookConfig([]string{fsmonitorHook})
}

// WriteHookConfig is WriteConfig with the hook a command line (a program
// and its first arguments, git appending "2 TOKEN"; nil: no hook), and
// core.untrackedCache on with it, so that after the first status the
// untracked scan visits only what the hook reports.
func (a *Admin) WriteHookConfig(hook []string) error {
	var b strings.Builder
	b.WriteString("[core]\n\tbare = false\n")
	if len(hook) > 0 {
		// git runs core.fsmonitor through the shell (run_command's
		// use_shell): a path with a space is two words unless quoted for
		// the shell too (measured: "/tmp/a b/hook" ran "/tmp/a").
		words := make([]string, len(hook))
		for i, w := range hook {
			words[i] = shellQuote(w)
		}
		b.WriteString("\tfsmonitor = " + configQuote(strings.Join(words, " ")) + "\n")
		b.WriteString("\tuntrackedCache = true\n")
		b.WriteString("\tfsmonitorHookVersion = 2\n")
		b.WriteString("[fsmonitor]\n\tallowRemote = true\n")
	}
	return a.write("config.worktree", []byte(b.String()))
}

// configQuote quotes a value as git's config parser reads it: inside
// double quotes, a backslash and a double quote are escaped, and a newline
// is \n.
func configQuote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

// shellQuote quotes a word for sh: inside single quotes, a single quote is
// '\”.
func shellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
