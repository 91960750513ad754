package mount

import (
	"fmt"
	"math"
	"os/user"
	"strconv"
	"strings"
)

// Invoker is the user who ran gitnfs as root through sudo, doas or pkexec:
// the process is root's, but the tree it serves is theirs to use. Linux
// mounts NFS only as root, so `sudo gitnfs mount` is how an ordinary user
// mounts; served as root (0644 files owned by uid 0, only uid 0 admitted)
// the tree refused them every access, and git refuses a worktree someone
// else owns ("dubious ownership").
type Invoker struct {
	UID, GID uint32
	Name     string // the account's name; "" when unknown
	From     string // the variable it came from: SUDO_UID, DOAS_USER, PKEXEC_UID
}

func (i Invoker) String() string {
	who := i.From
	if i.Name != "" {
		who = i.Name + ", from " + i.From
	}
	return fmt.Sprintf("uid %d, gid %d (%s)", i.UID, i.GID, who)
}

// Accounts looks accounts up by uid and by name, and an account's groups
// (os/user in OSAccounts).
type Accounts struct {
	ByID   func(uid string) (*user.User, error)
	ByName func(name string) (*user.User, error)
	Groups func(u *user.User) ([]string, error)
}

// OSAccounts reads the system's account database.
var OSAccounts = Accounts{ByID: user.LookupId, ByName: user.Lookup, Groups: (*user.User).GroupIds}

// GroupsOf returns the groups a process running as inv should have: its
// gid and its account's supplementary groups, as a login gives them (a
// repository readable through a group stays readable). Only inv.GID when
// they cannot be read.
func (a Accounts) GroupsOf(inv Invoker) []uint32 {
	groups := []uint32{inv.GID}
	u, err := a.ByID(strconv.FormatUint(uint64(inv.UID), 10))
	if err != nil {
		return groups
	}
	ids, err := a.Groups(u)
	if err != nil {
		return groups
	}
	for _, g := range ids {
		if n, err := parseID(g); err == nil && n != inv.GID {
			groups = append(groups, n)
		}
	}
	return groups
}

// FindInvoker returns who ran this process through a privilege tool, read
// from the variables the tool sets, and only when the effective uid euid is
// root, as git reads SUDO_UID for its ownership check (git-compat-util.h,
// is_path_owned_by_current_uid): run as root without sudo, or as anyone
// else, nothing changes. The tools, first found wins:
//   - sudo (Linux, and macOS, whose sudo is sudo.ws's) and sudo-rs set
//     SUDO_UID and SUDO_GID (and SUDO_USER, the name);
//   - doas (OpenBSD, opendoas) sets DOAS_USER, a name, looked up;
//   - pkexec sets PKEXEC_UID, looked up for the group.
//
// An invoker of uid 0 (root ran sudo) is no invoker. A value that cannot be
// used (not a number, an unknown account) is ignored with a warning, never
// fatal: the process then serves as it did before.
func FindInvoker(euid int, getenv func(string) string, accounts Accounts) (_ Invoker, ok bool, warnings []string) {
	if euid != 0 {
		return Invoker{}, false, nil
	}
	ignore := func(format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf("ignoring "+format, args...))
	}
	found := func(inv Invoker) (Invoker, bool, []string) {
		if inv.UID == 0 {
			return Invoker{}, false, warnings // root ran sudo: root it is
		}
		return inv, true, warnings
	}
	if v := getenv("SUDO_UID"); v != "" {
		if inv, ok := fromSudo(v, getenv, accounts, ignore); ok {
			return found(inv)
		}
	}
	if name := getenv("DOAS_USER"); name != "" {
		if u, err := accounts.ByName(name); err != nil {
			ignore("DOAS_USER=%q: %v", name, err)
		} else if inv, ok := fromAccount(u, "DOAS_USER", ignore); ok {
			return found(inv)
		}
	}
	if v := getenv("PKEXEC_UID"); v != "" {
		if uid, err := parseID(v); err != nil {
			ignore("PKEXEC_UID=%q: %v", v, err)
		} else if u, err := accounts.ByID(strconv.FormatUint(uint64(uid), 10)); err != nil {
			ignore("PKEXEC_UID=%q: %v", v, err)
		} else if inv, ok := fromAccount(u, "PKEXEC_UID", ignore); ok {
			return found(inv)
		}
	}
	return Invoker{}, false, warnings
}

// fromSudo reads SUDO_UID (v), SUDO_GID and SUDO_USER. sudo always sets
// all three; a SUDO_GID missing or unusable is taken from the account.
func fromSudo(v string, getenv func(string) string, accounts Accounts, ignore func(string, ...any)) (Invoker, bool) {
	uid, err := parseID(v)
	if err != nil {
		ignore("SUDO_UID=%q: %v", v, err)
		return Invoker{}, false
	}
	inv := Invoker{UID: uid, Name: getenv("SUDO_USER"), From: "SUDO_UID"}
	g := getenv("SUDO_GID")
	if inv.GID, err = parseID(g); err == nil {
		return inv, true
	}
	u, lerr := accounts.ByID(strconv.FormatUint(uint64(uid), 10))
	if lerr != nil {
		ignore("SUDO_UID=%d: SUDO_GID=%q is %v, and the account's group is unknown (%v)", uid, g, err, lerr)
		return Invoker{}, false
	}
	gid, perr := parseID(u.Gid)
	if perr != nil {
		ignore("SUDO_UID=%d: SUDO_GID=%q is %v, and the account's group %q is %v", uid, g, err, u.Gid, perr)
		return Invoker{}, false
	}
	inv.GID = gid
	if inv.Name == "" {
		inv.Name = u.Username
	}
	return inv, true
}

func fromAccount(u *user.User, from string, ignore func(string, ...any)) (Invoker, bool) {
	uid, err := parseID(u.Uid)
	if err == nil {
		var gid uint32
		if gid, err = parseID(u.Gid); err == nil {
			return Invoker{UID: uid, GID: gid, Name: u.Username, From: from}, true
		}
	}
	ignore("%s: account %s (uid %q, gid %q): %v", from, u.Username, u.Uid, u.Gid, err)
	return Invoker{}, false
}

// EnvFor returns env (KEY=VALUE lines) for a process run as inv: HOME,
// USER and LOGNAME those of inv's account, as `sudo -H -u USER` sets them.
// sudo leaves HOME at root's (/root, 0700) on most systems: a server
// running as inv could not read the global git config there (EACCES, which
// tree.Open reports as a config error: no promisor remote, no merge
// drivers), and git's global config for inv's repository is theirs. An
// unknown account gets no HOME: no global config is read.
func (a Accounts) EnvFor(env []string, inv Invoker) []string {
	set := map[string]string{"HOME": "", "USER": inv.Name, "LOGNAME": inv.Name}
	if u, err := a.ByID(strconv.FormatUint(uint64(inv.UID), 10)); err == nil {
		set["HOME"] = u.HomeDir
		if u.Username != "" {
			set["USER"], set["LOGNAME"] = u.Username, u.Username
		}
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if set[k] != "" {
			out = append(out, k+"="+set[k])
		}
	}
	return out
}

// parseID reads a uid or gid: decimal, 0 to 2^32-2 ((uid_t)-1 means "no
// change" to chown(2), never an owner).
func parseID(s string) (uint32, error) {
	if s == "" {
		return 0, fmt.Errorf("not set")
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n > math.MaxUint32-1 {
		return 0, fmt.Errorf("not a numeric id from 0 to %d", uint32(math.MaxUint32-1))
	}
	return uint32(n), nil
}
