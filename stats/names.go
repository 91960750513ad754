package stats

import (
	"strconv"

	nfsproc "github.com/gitnfs/gitnfs/nfs/proc"
)

// ONC RPC program numbers the census names.
const (
	ProgPortmap = 100000
	ProgNFS     = 100003
	ProgMount   = 100005
	ProgRquota  = 100011
	ProgNLM     = 100021
	ProgNSM     = 100024
	ProgNFSACL  = 100227
)

// RPC-level outcomes share the status argument of Census.RPC with the
// NFS/MOUNT status of an accepted call. NFS and MOUNT statuses are small
// (< 10009), so these sit at the top of the uint32 range where no program
// status lives: 0xFFFF0000 + accept_stat for accepted-but-failed calls,
// 0xFFFF0100 + reject_stat for denied calls (RFC 5531 §9).
const (
	rpcStatusBase = 0xFFFF0000

	StatusProgUnavail  uint32 = rpcStatusBase + 1     // accept_stat PROG_UNAVAIL
	StatusProgMismatch uint32 = rpcStatusBase + 2     // accept_stat PROG_MISMATCH
	StatusProcUnavail  uint32 = rpcStatusBase + 3     // accept_stat PROC_UNAVAIL
	StatusGarbageArgs  uint32 = rpcStatusBase + 4     // accept_stat GARBAGE_ARGS
	StatusSystemErr    uint32 = rpcStatusBase + 5     // accept_stat SYSTEM_ERR
	StatusRPCMismatch  uint32 = rpcStatusBase + 0x100 // reject_stat RPC_MISMATCH
	StatusAuthError    uint32 = rpcStatusBase + 0x101 // reject_stat AUTH_ERROR
)

// AcceptStatus maps an RFC 5531 accept_stat (MSG_ACCEPTED reply) to the
// census status: SUCCESS (0) stays 0 so the program's own status is used.
func AcceptStatus(acceptStat uint32) uint32 {
	if acceptStat == 0 {
		return 0
	}
	return rpcStatusBase + acceptStat
}

// RejectStatus maps an RFC 5531 reject_stat (MSG_DENIED reply).
func RejectStatus(rejectStat uint32) uint32 { return rpcStatusBase + 0x100 + rejectStat }

// MOUNT v1–v3 share these numbers (v1/v2 add EXPORTALL, PATHCONF above).
var mountProcs = [...]string{"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"}

// NFSv3's procedures are numbered and named once, in nfs/proc, which the
// protocol's registry uses too.
const (
	nfsProcCount   = nfsproc.Count
	mountProcCount = len(mountProcs)
)

// progName is the short program name used in row names and metric labels.
func progName(prog uint32) string {
	switch prog {
	case ProgPortmap:
		return "PORTMAP"
	case ProgNFS:
		return "NFS"
	case ProgMount:
		return "MOUNT"
	case ProgRquota:
		return "RQUOTA"
	case ProgNLM:
		return "NLM"
	case ProgNSM:
		return "NSM"
	case ProgNFSACL:
		return "NFS_ACL"
	}
	return "prog" + strconv.FormatUint(uint64(prog), 10)
}

// procOnly names a procedure without its program; numbering is that of
// version vers ("" when unknown).
func procOnly(prog, vers, proc uint32) string {
	switch {
	case prog == ProgNFS && vers == 3 && proc < uint32(nfsProcCount):
		return nfsproc.Name(proc)
	case prog == ProgMount && vers >= 1 && vers <= 3 && proc < uint32(mountProcCount):
		return mountProcs[proc]
	}
	return "proc" + strconv.FormatUint(uint64(proc), 10)
}

// ProcName names an NFSv3 or MOUNTv3 procedure: "NFS3.READDIRPLUS",
// "MOUNT3.MNT"; other programs get "NLM.proc7", "prog400000.proc1".
func ProcName(prog, proc uint32) string {
	if prog == ProgNFS || prog == ProgMount {
		return rowName(prog, 3, proc)
	}
	return progName(prog) + "." + procOnly(prog, 3, proc)
}

// rowName is the census row name. The version is part of it because NFSv2
// and NFSv4 number their procedures differently: "NFS2.proc4" is not LOOKUP.
func rowName(prog, vers, proc uint32) string {
	return progName(prog) + strconv.FormatUint(uint64(vers), 10) + "." + procOnly(prog, vers, proc)
}

var nfsStatusNames = map[uint32]string{
	1: "PERM", 2: "NOENT", 5: "IO", 6: "NXIO", 13: "ACCES", 17: "EXIST",
	18: "XDEV", 19: "NODEV", 20: "NOTDIR", 21: "ISDIR", 22: "INVAL",
	27: "FBIG", 28: "NOSPC", 30: "ROFS", 31: "MLINK", 63: "NAMETOOLONG",
	66: "NOTEMPTY", 69: "DQUOT", 70: "STALE", 71: "REMOTE",
	10001: "BADHANDLE", 10002: "NOT_SYNC", 10003: "BAD_COOKIE",
	10004: "NOTSUPP", 10005: "TOOSMALL", 10006: "SERVERFAULT",
	10007: "BADTYPE", 10008: "JUKEBOX",
}

// MOUNT3 mountstat3 values (RFC 1813 §5.1.5), a subset of the NFS numbers.
var mountStatusNames = map[uint32]string{
	1: "PERM", 2: "NOENT", 5: "IO", 13: "ACCES", 20: "NOTDIR", 22: "INVAL",
	63: "NAMETOOLONG", 10004: "NOTSUPP", 10006: "SERVERFAULT",
}

var rpcStatusNames = map[uint32]string{
	StatusProgUnavail:  "PROG_UNAVAIL",
	StatusProgMismatch: "PROG_MISMATCH",
	StatusProcUnavail:  "PROC_UNAVAIL",
	StatusGarbageArgs:  "GARBAGE_ARGS",
	StatusSystemErr:    "SYSTEM_ERR",
	StatusRPCMismatch:  "RPC_MISMATCH",
	StatusAuthError:    "AUTH_ERROR",
}

// StatusName names a reply status: "NFS3_OK", "NFS3ERR_NOENT", "MNT3_OK",
// "MNT3ERR_ACCES", the RPC-level "PROG_UNAVAIL", ... Unknown values keep
// their number ("NFS3ERR_9999", "status_7") so nothing is silently merged.
func StatusName(prog uint32, status uint32) string {
	if n, ok := rpcStatusNames[status]; ok {
		return n
	}
	if status >= rpcStatusBase {
		if status >= rpcStatusBase+0x100 {
			return "RPC_REJECT_" + strconv.FormatUint(uint64(status-rpcStatusBase-0x100), 10)
		}
		return "RPC_ACCEPT_" + strconv.FormatUint(uint64(status-rpcStatusBase), 10)
	}
	switch prog {
	case ProgNFS:
		if status == 0 {
			return "NFS3_OK"
		}
		if n, ok := nfsStatusNames[status]; ok {
			return "NFS3ERR_" + n
		}
		return "NFS3ERR_" + strconv.FormatUint(uint64(status), 10)
	case ProgMount:
		if status == 0 {
			return "MNT3_OK"
		}
		if n, ok := mountStatusNames[status]; ok {
			return "MNT3ERR_" + n
		}
		return "MNT3ERR_" + strconv.FormatUint(uint64(status), 10)
	}
	if status == 0 {
		return "OK"
	}
	return "status_" + strconv.FormatUint(uint64(status), 10)
}

// statusIndex maps the statuses worth a preallocated counter to a dense
// index 1..statusSlots-1 (0 = none: OK, or a value for the overflow map).
// It is a table lookup so the hot path stays branch-light.
func statusIndex(status uint32) int {
	switch {
	case status < uint32(len(smallStatusIdx)):
		return int(smallStatusIdx[status])
	case status >= 10001 && status <= 10008:
		return smallStatusCount + int(status-10001) + 1
	case status >= StatusProgUnavail && status <= StatusSystemErr:
		return smallStatusCount + 8 + int(status-StatusProgUnavail) + 1
	case status == StatusRPCMismatch || status == StatusAuthError:
		return smallStatusCount + 8 + 5 + int(status-StatusRPCMismatch) + 1
	}
	return 0
}

const statusSlots = 1 + smallStatusCount + 8 + 5 + 2

// smallStatusCodes are the NFS3 error values below 128, in index order.
var smallStatusCodes = [...]uint32{1, 2, 5, 6, 13, 17, 18, 19, 20, 21, 22, 27, 28, 30, 31, 63, 66, 69, 70, 71}

const smallStatusCount = len(smallStatusCodes)

var (
	smallStatusIdx [128]uint8
	// statusByIndex inverts statusIndex for the report.
	statusByIndex [statusSlots]uint32
)

func init() {
	for i, s := range smallStatusCodes {
		smallStatusIdx[s] = uint8(i + 1)
	}
	for s := range uint32(128) {
		if i := statusIndex(s); i != 0 {
			statusByIndex[i] = s
		}
	}
	for s := uint32(10001); s <= 10008; s++ {
		statusByIndex[statusIndex(s)] = s
	}
	for s := range rpcStatusNames {
		statusByIndex[statusIndex(s)] = s
	}
}
