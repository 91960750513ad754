package gitwrite

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitnfs/gitnfs/tree"
)

func identString(s object.Signature) string {
	return fmt.Sprintf("%s <%s> %d %s", s.Name, s.Email, s.When.Unix(), s.When.Format("-0700"))
}

// TestIdentIsGits: the author and committer identities and dates are
// git var GIT_AUTHOR_IDENT's and GIT_COMMITTER_IDENT's for the same
// environment and config: env over author.*/committer.* over user.*, then
// $EMAIL; dates in git's internal, ISO 8601 and RFC 2822 forms.
func TestIdentIsGits(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	e := env{"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
	e.git(t, dir, "", "init", "-q", "--bare", ".")
	cfgFile := filepath.Join(home, ".gitconfig")
	cases := []struct {
		name   string
		config string
		env    env
	}{
		{"env wins", "[user]\n\tname = U\n\temail = u@x\n[author]\n\tname = Au\n",
			env{"GIT_AUTHOR_NAME": "Env A", "GIT_AUTHOR_EMAIL": "ea@x", "GIT_COMMITTER_NAME": "Env C", "GIT_COMMITTER_EMAIL": "ec@x"}},
		{"author.* and committer.* over user.*", "[user]\n\tname = U\n\temail = u@x\n[author]\n\tname = Au\n[committer]\n\temail = c@x\n", env{}},
		{"user.* for both", "[user]\n\tname = U\n\temail = u@x\n", env{}},
		{"$EMAIL after the config", "[user]\n\tname = U\n", env{"EMAIL": "mail@x"}},
		{"internal date", "[user]\n\tname = U\n\temail = u@x\n", env{"GIT_AUTHOR_DATE": "1700000000 +0130", "GIT_COMMITTER_DATE": "@1700000100 -0700"}},
		{"ISO 8601 dates", "[user]\n\tname = U\n\temail = u@x\n", env{"GIT_AUTHOR_DATE": "2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE": "2024-01-02T03:04:05+02:00"}},
		{"other ISO and RFC 2822", "[user]\n\tname = U\n\temail = u@x\n", env{"GIT_AUTHOR_DATE": "2024-01-02 03:04:05 -0330", "GIT_COMMITTER_DATE": "Tue, 2 Jan 2024 03:04:05 +0200"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(cfgFile, []byte(c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			all := env{}
			for k, v := range e {
				all[k] = v
			}
			for k, v := range c.env {
				all[k] = v
			}
			// Without a date, git and we both take now: pin ours to git's.
			now := time.Now()
			cfg, err := tree.LoadConfig(tree.ConfigFiles{GitDir: dir, Getenv: all.getenv})
			if err != nil {
				t.Fatal(err)
			}
			for role, v := range map[Role]string{Author: "GIT_AUTHOR_IDENT", Committer: "GIT_COMMITTER_IDENT"} {
				want := all.git(t, dir, "", "var", v)
				got, err := Ident(cfg, role, all.getenv, now)
				if err != nil {
					t.Fatal(err)
				}
				if _, hasDate := c.env[v[:len(v)-len("IDENT")]+"DATE"]; !hasDate {
					var secs int64
					var zone string
					fmt.Sscanf(want[len(want)-len("1700000000 +0000"):], "%d %s", &secs, &zone)
					got.When = time.Unix(secs, 0).In(got.When.Location())
					want = want[:len(want)-len("+0000")] + got.When.Format("-0700")
				}
				if identString(got) != want {
					t.Errorf("%s = %q, git var says %q", v, identString(got), want)
				}
			}
		})
	}
}

// TestSignatures: --author sets the author only (as git commit --author
// does); bad dates and a malformed --author are errors, not guesses.
func TestSignatures(t *testing.T) {
	e := env{"GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@x", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x"}
	now := time.Unix(1700000000, 0)
	a, c, err := Signatures(nil, "CI Bot <ci@example.com>", e.getenv, now)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "CI Bot" || a.Email != "ci@example.com" || c.Name != "C" || c.Email != "c@x" || !a.When.Equal(now) {
		t.Errorf("author %v, committer %v", a, c)
	}
	if _, _, err := Signatures(nil, "no email", e.getenv, now); err == nil {
		t.Error("--author without <email> accepted")
	}
	e["GIT_COMMITTER_DATE"] = "yesterday"
	if _, _, err := Signatures(nil, "", e.getenv, now); err == nil {
		t.Error("an approxidate accepted")
	}
	if a, _, err := Signatures(nil, "", env{}.getenv, now); err != nil || a.Name != fallbackName || a.Email != fallbackEmail {
		t.Errorf("no identity anywhere: %v, %v", a, err)
	}
	for _, d := range []string{"1700000000 +01", "1700000000 0100", "@x +0000"} {
		if _, err := ParseDate(d); err == nil {
			t.Errorf("date %q accepted", d)
		}
	}
}
