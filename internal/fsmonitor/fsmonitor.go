// Package fsmonitor answers git's fsmonitor hook, protocol version 2, from
// a journal of changed paths, so that `git status` in an export costs what
// changed, not what is there.
//
// The protocol, as git 2.39's fsmonitor.c speaks it (query_fsmonitor_hook,
// with core.fsmonitor naming a hook): git runs the hook with two arguments,
// "2" and the token it stored in the index's FSMN extension (on the first
// query, one it made up: a time in nanoseconds). The hook prints a new token
// and a NUL, then every path that may have changed since the old token,
// each followed by a NUL, relative to the work tree; a path ending in "/"
// is a directory and everything below it. "/" alone means "anything may
// have changed": git then checks every entry with lstat, as without a
// monitor. git stores the new token and passes it back on the next query,
// so the new token must name the journal as it was when the answer was
// made: a change recorded afterwards is in the next answer.
package fsmonitor

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Everything is the answer's path list for "anything may have changed".
const Everything = "/"

// Journal is the list of paths changed in an export, numbered. It keeps at
// most a bounded number of changes; a token older than the oldest kept is
// answered with Everything, as is a token of another journal (another
// server instance: its numbers mean nothing here) or one git made up.
type Journal struct {
	mu       sync.Mutex
	instance string
	seq      uint64   // the number of the last change; 0 before any
	dropped  uint64   // changes numbered up to this one are no longer kept
	changes  []change // in order, numbered dropped+1..seq
	limit    int
}

type change struct {
	seq  uint64
	path string
}

// NewJournal makes an empty journal. instance must differ between server
// instances (a random id made at start): after a restart no change from
// before is known, and a token of the old instance must not pass for one
// of the new. limit bounds the changes kept (at least 1).
func NewJournal(instance string, limit int) *Journal {
	return &Journal{instance: strings.ReplaceAll(instance, ":", "_"), limit: max(limit, 1)}
}

// Record notes that paths changed (slash-separated, relative to the export's
// root; a directory as "dir/" for everything below it). Recording a change
// is what makes git look at the path again: the content, the mode, the
// creation or removal of a file, both names of a rename.
func (j *Journal) Record(paths ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range paths {
		j.seq++
		j.changes = append(j.changes, change{j.seq, p})
	}
	if over := len(j.changes) - j.limit; over > 0 {
		// Drop a quarter at a time at least, so that a journal at its
		// limit does not move every change on each Record.
		over = max(over, len(j.changes)/4)
		j.dropped = j.changes[over-1].seq
		j.changes = append(j.changes[:0], j.changes[over:]...)
	}
}

// Token names the journal as it is now.
func (j *Journal) Token() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tokenLocked()
}

func (j *Journal) tokenLocked() string {
	return "gitnfs:" + j.instance + ":" + strconv.FormatUint(j.seq, 10)
}

// Since answers a query: the journal's token now, and the paths changed
// after token (each once, in the order first changed), or [Everything]
// when the journal cannot say.
func (j *Journal) Since(token string) (now string, paths []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now = j.tokenLocked()
	seq, ok := j.parse(token)
	if !ok || seq < j.dropped || seq > j.seq {
		return now, []string{Everything}
	}
	seen := map[string]bool{}
	// changes[k] is numbered dropped+1+k.
	for _, c := range j.changes[seq-j.dropped:] {
		if c.path == Everything {
			// git reads "/" as "everything" only as the first path.
			return now, []string{Everything}
		}
		if !seen[c.path] {
			seen[c.path] = true
			paths = append(paths, c.path)
		}
	}
	return now, paths
}

func (j *Journal) parse(token string) (uint64, bool) {
	rest, ok := strings.CutPrefix(token, "gitnfs:"+j.instance+":")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}

// Answer writes the hook's reply to a query of version version with token:
// the new token, NUL, and each path followed by NUL. A version other than 2
// gets nothing and false: git then falls back (to version 1, which this
// package does not speak, and then to no monitor at all: a full check).
func (j *Journal) Answer(w io.Writer, version, token string) (bool, error) {
	if version != "2" {
		return false, nil
	}
	now, paths := j.Since(token)
	var b bytes.Buffer
	b.WriteString(now)
	b.WriteByte(0)
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte(0)
	}
	_, err := w.Write(b.Bytes())
	return true, err
}
