// Package promisor serves the objects a partial clone does not hold: it
// knows the repository's promisor remotes (as git's promisor-remote.c reads
// them), asks a remote for object sizes over protocol v2's object-info
// command, and fetches missing objects by running the git binary exactly as
// git's own lazy fetch does, so that only git ever writes the object store.
// Requests are batched: the store (package tree) hands it a wanted object
// and the missing objects beside it, and concurrent requests share the
// round trips in flight.
package promisor

import (
	"fmt"
	"strings"
)

// Config is what the promisor setup is read from: a repository's git
// configuration (*tree.Config implements it).
type Config interface {
	Get(section, subsection, key string) (string, bool)
	GetAll(section, subsection, key string) []string
	Subsections(section string) []string
}

// Remote is one promisor remote.
type Remote struct {
	Name string
	// URL is remote.NAME.url after url.BASE.insteadOf rewriting, the way
	// git fetch reaches it ("" never: a remote without a url is its name,
	// as in git).
	URL string
	// Filter is remote.NAME.partialclonefilter ("" when not set).
	Filter string
	// UploadPack is remote.NAME.uploadpack, the command a local or ssh
	// remote runs ("" means git-upload-pack).
	UploadPack string
}

// Remotes lists the promisor remotes of a repository in the order git
// tries them (promisor-remote.c's promisor_remote_init): every remote with
// remote.NAME.promisor true or remote.NAME.partialclonefilter set, in the
// order the config first names them, then the one extensions.partialClone
// names (moved last, or added). all is every scope of the config, local
// the repository's own file (git reads extensions from it only).
//
// Where this differs from git: git orders remotes by the first promisor
// or partialclonefilter key; this reads the order of the first key of any
// kind in each [remote "NAME"] section, which is the same for a config
// git clone wrote. A later `promisor = false` does not unset an earlier
// true one, as in git.
func Remotes(all, local Config) []Remote {
	var names []string
	for _, name := range all.Subsections("remote") {
		if strings.HasPrefix(name, "/") {
			continue // git warns and ignores it
		}
		promisor := false
		for _, v := range all.GetAll("remote", name, "promisor") {
			if isTrue(v) {
				promisor = true
			}
		}
		if _, ok := all.Get("remote", name, "partialclonefilter"); ok {
			promisor = true
		}
		if promisor {
			names = append(names, name)
		}
	}
	if pc, ok := local.Get("extensions", "", "partialclone"); ok && pc != "" && !strings.HasPrefix(pc, "/") {
		for i, n := range names {
			if n == pc {
				names = append(names[:i:i], names[i+1:]...)
				break
			}
		}
		names = append(names, pc)
	}
	out := make([]Remote, 0, len(names))
	for _, name := range names {
		r := Remote{Name: name, URL: name}
		if urls := all.GetAll("remote", name, "url"); len(urls) > 0 {
			r.URL = urls[0] // git fetch uses the first
		}
		r.URL = rewriteURL(all, r.URL)
		r.Filter, _ = all.Get("remote", name, "partialclonefilter")
		r.UploadPack, _ = all.Get("remote", name, "uploadpack")
		out = append(out, r)
	}
	return out
}

// rewriteURL applies url.BASE.insteadOf as git does: the longest matching
// prefix wins.
func rewriteURL(cfg Config, url string) string {
	best, bestLen := "", -1
	for _, base := range cfg.Subsections("url") {
		for _, prefix := range cfg.GetAll("url", base, "insteadof") {
			if strings.HasPrefix(url, prefix) && len(prefix) > bestLen {
				best, bestLen = base, len(prefix)
			}
		}
	}
	if bestLen < 0 {
		return url
	}
	return best + url[bestLen:]
}

// isTrue is git's boolean for a config value: a key written without a
// value reads as "" here and is true for git.
func isTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

// String names the remote for messages: "origin (git://host/repo)".
func (r Remote) String() string {
	if r.URL == r.Name {
		return r.Name
	}
	return fmt.Sprintf("%s (%s)", r.Name, redact(r.URL))
}

// redact drops a password from a URL for messages and logs.
func redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok || strings.Contains(userinfo, "/") {
		return url
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":***@" + host
	}
	return url
}
