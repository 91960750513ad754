package gitwrite

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitnfs/gitnfs/tree"
)

// Role is whose identity a commit records.
type Role uint8

// The two identities of a commit.
const (
	Author Role = iota
	Committer
)

// env is the environment prefix and config section of a role.
func (r Role) env() (prefix, section string) {
	if r == Committer {
		return "GIT_COMMITTER_", "committer"
	}
	return "GIT_AUTHOR_", "author"
}

// Fallbacks where git would stop and ask "Please tell me who you are":
// a sandbox's commit must not fail for want of an identity.
const (
	fallbackName  = "gitnfs"
	fallbackEmail = "gitnfs@localhost"
)

// Ident is role's identity as git finds it: GIT_AUTHOR_NAME (or
// GIT_COMMITTER_NAME), then author.name (committer.name), then user.name;
// the email likewise, then $EMAIL. Where git would give up, gitnfs and
// gitnfs@localhost. The date is GIT_AUTHOR_DATE (GIT_COMMITTER_DATE) if set,
// else now.
func Ident(cfg *tree.Config, role Role, getenv func(string) string, now time.Time) (object.Signature, error) {
	prefix, section := role.env()
	pick := func(key string, fallback ...string) string {
		if v := getenv(prefix + strings.ToUpper(key)); v != "" {
			return v
		}
		for _, sec := range []string{section, "user"} {
			if v, ok := cfg.Get(sec, "", key); ok && v != "" {
				return v
			}
		}
		for _, f := range fallback {
			if f != "" {
				return f
			}
		}
		return ""
	}
	sig := object.Signature{Name: pick("name", fallbackName), Email: pick("email", getenv("EMAIL"), fallbackEmail), When: now}
	if d := getenv(prefix + "DATE"); d != "" {
		when, err := ParseDate(d)
		if err != nil {
			return object.Signature{}, fmt.Errorf("%sDATE: %w", prefix, err)
		}
		sig.When = when
	}
	return sig, nil
}

// Signatures are a commit's author and committer: author as given
// ("Name <email>", as git commit --author takes it) or from Ident, the
// committer always from Ident.
func Signatures(cfg *tree.Config, author string, getenv func(string) string, now time.Time) (a, c object.Signature, err error) {
	if c, err = Ident(cfg, Committer, getenv, now); err != nil {
		return a, c, err
	}
	if author == "" {
		a, err = Ident(cfg, Author, getenv, now)
		return a, c, err
	}
	name, email, ok := strings.Cut(author, "<")
	if !ok || !strings.HasSuffix(author, ">") || strings.ContainsAny(email[:len(email)-1], "<>") {
		return a, c, fmt.Errorf("--author %q: want \"Name <email>\"", author)
	}
	a = object.Signature{Name: strings.TrimSpace(name), Email: strings.TrimSuffix(email, ">"), When: now}
	if d := getenv("GIT_AUTHOR_DATE"); d != "" {
		if a.When, err = ParseDate(d); err != nil {
			return a, c, fmt.Errorf("GIT_AUTHOR_DATE: %w", err)
		}
	}
	return a, c, nil
}

// dateLayouts are the spellings of GIT_*_DATE ParseDate takes besides
// git's internal "<unix seconds> <+hhmm>": RFC 3339 / ISO 8601 and RFC 2822.
var dateLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04:05-0700",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05Z07:00",
	time.RFC1123Z,
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006 -0700", // git log's default
}

// ParseDate reads a date as GIT_AUTHOR_DATE gives it, in the forms git
// documents (git-commit(1), "DATE FORMATS"): git's internal format
// ("1700000000 +0100", with or without a leading @), RFC 2822 and ISO 8601
// with a zone. Other forms git's approxidate would guess at are refused.
func ParseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	raw := strings.TrimPrefix(s, "@")
	secs, zone, hasZone := strings.Cut(raw, " ")
	if n, err := strconv.ParseInt(secs, 10, 64); err == nil {
		loc := time.UTC
		if hasZone {
			z, ok := parseZone(zone)
			if !ok {
				return time.Time{}, fmt.Errorf("date %q: bad time zone %q (want +hhmm)", s, zone)
			}
			loc = z
		}
		return time.Unix(n, 0).In(loc), nil
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q: want \"<unix seconds> +hhmm\", RFC 2822 or ISO 8601 with a zone", s)
}

func parseZone(z string) (*time.Location, bool) {
	if len(z) != 5 || (z[0] != '+' && z[0] != '-') {
		return nil, false
	}
	hh, err1 := strconv.Atoi(z[1:3])
	mm, err2 := strconv.Atoi(z[3:5])
	if err1 != nil || err2 != nil || mm > 59 {
		return nil, false
	}
	off := hh*3600 + mm*60
	if z[0] == '-' {
		off = -off
	}
	return time.FixedZone("", off), true
}
