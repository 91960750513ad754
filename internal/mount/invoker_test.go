package mount

import (
	"errors"
	"os/user"
	"slices"
	"strings"
	"testing"
)

// fakeAccounts knows alice (1000:1000, also in groups 27 and 100) and bob
// (1001:1002).
var fakeAccounts = Accounts{
	ByID: func(uid string) (*user.User, error) {
		switch uid {
		case "1000":
			return &user.User{Uid: "1000", Gid: "1000", Username: "alice", HomeDir: "/home/alice"}, nil
		case "1001":
			return &user.User{Uid: "1001", Gid: "1002", Username: "bob"}, nil
		}
		return nil, user.UnknownUserIdError(0)
	},
	ByName: func(name string) (*user.User, error) {
		switch name {
		case "alice":
			return &user.User{Uid: "1000", Gid: "1000", Username: "alice"}, nil
		case "bob":
			return &user.User{Uid: "1001", Gid: "1002", Username: "bob"}, nil
		}
		return nil, user.UnknownUserError(name)
	},
	Groups: func(u *user.User) ([]string, error) {
		if u.Username == "alice" {
			return []string{"1000", "27", "100"}, nil
		}
		return nil, errors.New("no group database")
	},
}

func TestFindInvokerReadsWhatSudoDoasAndPkexecSet(t *testing.T) {
	for _, c := range []struct {
		name    string
		euid    int
		env     map[string]string
		want    Invoker // zero: none
		warning string  // a substring of the one warning; "": none
	}{
		{"sudo", 0, map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000", "SUDO_USER": "alice"},
			Invoker{UID: 1000, GID: 1000, Name: "alice", From: "SUDO_UID"}, ""},
		// sudo's gid is the invoking user's real gid, not the account's.
		{"sudo gid as given", 0, map[string]string{"SUDO_UID": "1000", "SUDO_GID": "50", "SUDO_USER": "alice"},
			Invoker{UID: 1000, GID: 50, Name: "alice", From: "SUDO_UID"}, ""},
		{"sudo without SUDO_GID: the account's", 0, map[string]string{"SUDO_UID": "1001"},
			Invoker{UID: 1001, GID: 1002, Name: "bob", From: "SUDO_UID"}, ""},
		{"not root: as git does, SUDO_UID means nothing", 1000, map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000"},
			Invoker{}, ""},
		{"root ran sudo", 0, map[string]string{"SUDO_UID": "0", "SUDO_GID": "0"}, Invoker{}, ""},
		{"no tool", 0, map[string]string{}, Invoker{}, ""},
		{"SUDO_UID not a number", 0, map[string]string{"SUDO_UID": "alice", "SUDO_GID": "1000"},
			Invoker{}, `ignoring SUDO_UID="alice": not a numeric id`},
		{"SUDO_UID (uid_t)-1", 0, map[string]string{"SUDO_UID": "4294967295", "SUDO_GID": "1000"},
			Invoker{}, `ignoring SUDO_UID="4294967295"`},
		{"SUDO_UID negative", 0, map[string]string{"SUDO_UID": "-1", "SUDO_GID": "1000"},
			Invoker{}, `ignoring SUDO_UID="-1"`},
		{"SUDO_GID bad, account unknown", 0, map[string]string{"SUDO_UID": "4242", "SUDO_GID": "x"},
			Invoker{}, `SUDO_GID="x"`},
		{"doas", 0, map[string]string{"DOAS_USER": "bob"},
			Invoker{UID: 1001, GID: 1002, Name: "bob", From: "DOAS_USER"}, ""},
		{"doas, unknown user", 0, map[string]string{"DOAS_USER": "mallory"},
			Invoker{}, `ignoring DOAS_USER="mallory"`},
		{"pkexec", 0, map[string]string{"PKEXEC_UID": "1000"},
			Invoker{UID: 1000, GID: 1000, Name: "alice", From: "PKEXEC_UID"}, ""},
		{"pkexec, not a number", 0, map[string]string{"PKEXEC_UID": "1e3"},
			Invoker{}, `ignoring PKEXEC_UID="1e3"`},
		{"sudo first", 0, map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000", "DOAS_USER": "bob", "PKEXEC_UID": "1001"},
			Invoker{UID: 1000, GID: 1000, From: "SUDO_UID"}, ""},
		{"a bad SUDO_UID falls through to doas", 0, map[string]string{"SUDO_UID": "?", "DOAS_USER": "bob"},
			Invoker{UID: 1001, GID: 1002, Name: "bob", From: "DOAS_USER"}, `ignoring SUDO_UID="?"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, warnings := FindInvoker(c.euid, func(k string) string { return c.env[k] }, fakeAccounts)
			if ok != (c.want != Invoker{}) || got != c.want {
				t.Errorf("FindInvoker = %+v, %v; want %+v", got, ok, c.want)
			}
			switch {
			case c.warning == "" && len(warnings) != 0:
				t.Errorf("warnings %q, want none", warnings)
			case c.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], c.warning)):
				t.Errorf("warnings %q, want one with %q", warnings, c.warning)
			}
		})
	}
}

func TestInvokerSaysWhoAndWhence(t *testing.T) {
	if got, want := (Invoker{UID: 1000, GID: 1000, Name: "alice", From: "SUDO_UID"}).String(), "uid 1000, gid 1000 (alice, from SUDO_UID)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := (Invoker{UID: 7, GID: 8, From: "SUDO_UID"}).String(), "uid 7, gid 8 (SUDO_UID)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestGroupsOfAreTheAccountsWithItsGIDFirst(t *testing.T) {
	if got, want := fakeAccounts.GroupsOf(Invoker{UID: 1000, GID: 1000}), []uint32{1000, 27, 100}; !slices.Equal(got, want) {
		t.Errorf("alice's groups %v, want %v", got, want)
	}
	// Unreadable groups, or an unknown account: the gid alone.
	if got, want := fakeAccounts.GroupsOf(Invoker{UID: 1001, GID: 1002}), []uint32{1002}; !slices.Equal(got, want) {
		t.Errorf("bob's groups %v, want %v", got, want)
	}
	if got, want := fakeAccounts.GroupsOf(Invoker{UID: 4242, GID: 4343}), []uint32{4343}; !slices.Equal(got, want) {
		t.Errorf("an unknown account's groups %v, want %v", got, want)
	}
}

func TestEnvForIsTheAccountsHome(t *testing.T) {
	env := []string{"PATH=/usr/bin", "HOME=/root", "USER=root", "LOGNAME=root", "SUDO_UID=1000", "HOMEDIR=x"}
	got := fakeAccounts.EnvFor(env, Invoker{UID: 1000, GID: 1000, Name: "alice", From: "SUDO_UID"})
	want := []string{"PATH=/usr/bin", "SUDO_UID=1000", "HOMEDIR=x", "HOME=/home/alice", "USER=alice", "LOGNAME=alice"}
	if !slices.Equal(got, want) {
		t.Errorf("alice's env %q, want %q", got, want)
	}
	// No account: root's HOME is not theirs, and no other is known.
	got = fakeAccounts.EnvFor(env, Invoker{UID: 4242, GID: 4343, Name: "mallory", From: "SUDO_UID"})
	want = []string{"PATH=/usr/bin", "SUDO_UID=1000", "HOMEDIR=x", "USER=mallory", "LOGNAME=mallory"}
	if !slices.Equal(got, want) {
		t.Errorf("an unknown account's env %q, want %q", got, want)
	}
}
