package nfs_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// TestMountVersion1 pins MOUNT version 1 beside 3: Apple's client sends its
// UMNT as version 1 whatever it mounted with (kext/nfs_vfsops.c:4527-4529,
// nfs3_umount_rpc, at NFS-339), and NULL, DUMP, UMNT, UMNTALL and EXPORT are
// the same on the wire in both versions, so each v1 reply must be byte for
// byte the v3 one. MNT v1 (an NFSv2 handle) is PROC_UNAVAIL, and a version
// outside 1-3 is PROG_MISMATCH naming 1 to 3. Red before: every v1 call was
// PROG_MISMATCH (rpc accept stat 2).
func TestMountVersion1(t *testing.T) {
	s := serve(t, fixture(t), "HEAD")
	c, err := nfsclient.Dial(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var path nfsclient.Enc
	path.String("/dir")
	for _, tc := range []struct {
		name string
		proc uint32
		args []byte
	}{
		{"NULL", 0, nil},
		{"DUMP", 2, nil},
		{"UMNT", 3, path.B},
		{"UMNTALL", 4, nil},
		{"EXPORT", 5, nil},
	} {
		v3, err := c.Call(nfsclient.ProgMount, 3, tc.proc, tc.args)
		if err != nil {
			t.Fatalf("%s v3: %v", tc.name, err)
		}
		v1, err := c.Call(nfsclient.ProgMount, 1, tc.proc, tc.args)
		if err != nil {
			t.Errorf("%s v1: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(v1, v3) {
			t.Errorf("%s v1 answered %x, v3 %x", tc.name, v1, v3)
		}
	}
	// UMNT's argument is still checked in version 1.
	if _, err := c.Call(nfsclient.ProgMount, 1, 3, []byte{0, 0, 0x10, 0}); !isAcceptStat(err, 4) {
		t.Errorf("UMNT v1 with a dirpath longer than its record: %v, want GARBAGE_ARGS", err)
	}
	if _, err := c.Call(nfsclient.ProgMount, 1, 1, path.B); !isAcceptStat(err, 3) {
		t.Errorf("MNT v1: %v, want PROC_UNAVAIL", err)
	}
	for _, vers := range []uint32{2, 4} {
		if _, err := c.Call(nfsclient.ProgMount, vers, 0, nil); !isAcceptStat(err, 2) {
			t.Errorf("MOUNT v%d NULL: %v, want PROG_MISMATCH", vers, err)
		}
	}
}

func isAcceptStat(err error, stat uint32) bool {
	var re *nfsclient.RPCError
	return errors.As(err, &re) && !re.Denied && re.Stat == stat
}
