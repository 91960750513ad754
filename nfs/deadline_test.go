package nfs

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitnfs/gitnfs/internal/nfsclient"
)

// TestDeadlineDue: a deadline moves to now+idle once it has run down by an
// eighth of idle, and not before; so it is never nearer than 7/8 of idle.
func TestDeadlineDue(t *testing.T) {
	const idle = 8 * time.Second
	t0 := time.Unix(1_700_000_000, 0)
	var by time.Time
	if !deadlineDue(&by, t0, idle) || !by.Equal(t0.Add(idle)) {
		t.Fatalf("no deadline yet: moved to %v, want %v", by, t0.Add(idle))
	}
	for _, tc := range []struct {
		after time.Duration
		moves bool
	}{{0, false}, {500 * time.Millisecond, false}, {time.Second - 1, false}, {time.Second, true}} {
		by = t0.Add(idle)
		now := t0.Add(tc.after)
		moved := deadlineDue(&by, now, idle)
		if moved != tc.moves {
			t.Errorf("%v after setting it: moved %v, want %v", tc.after, moved, tc.moves)
		}
		if left := by.Sub(now); left < idle-idle/deadlineSlack || left > idle {
			t.Errorf("%v after setting it: %v left, want between 7/8 of idle and idle", tc.after, left)
		}
	}
	by = t0.Add(idle)
	if !deadlineDue(&by, t0.Add(2*idle), idle) || !by.Equal(t0.Add(3*idle)) {
		t.Errorf("a deadline that passed did not move to now+idle: %v", by)
	}
}

// deadlineConn counts the deadlines set on a connection.
type deadlineConn struct {
	net.Conn
	sets atomic.Int64
}

func (d *deadlineConn) SetReadDeadline(t time.Time) error {
	d.sets.Add(1)
	return d.Conn.SetReadDeadline(t)
}

func (d *deadlineConn) SetWriteDeadline(t time.Time) error {
	d.sets.Add(1)
	return d.Conn.SetWriteDeadline(t)
}

// TestLoneCallsDoNotMoveDeadlines: a client that sends one call at a time
// (each answered before the next is sent) costs the connection a deadline
// update now and then, not three a call (setting one is a timer update in
// the runtime; three were a tenth of a lone GETATTR's server CPU).
func TestLoneCallsDoNotMoveDeadlines(t *testing.T) {
	f := &attrFS{}
	s := NewServer(f, Options{})
	client, server := net.Pipe()
	dc := &deadlineConn{Conn: server}
	done := make(chan struct{})
	go func() { s.serveConn(dc); close(done) }()
	defer func() { client.Close(); <-done }()
	rec := getattrRecord(f)
	r := bufio.NewReader(client)
	const calls = 200
	for i := 0; i < calls; i++ {
		if _, err := client.Write(binary.BigEndian.AppendUint32(nil, lastFragment|uint32(len(rec)))); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Write(rec); err != nil {
			t.Fatal(err)
		}
		reply, err := nfsclient.ReadRecord(r)
		if err != nil || binary.BigEndian.Uint32(reply) != 7 {
			t.Fatalf("call %d: reply % x, %v", i, reply, err)
		}
	}
	if n := dc.sets.Load(); n > 4 {
		t.Errorf("%d calls one at a time set %d deadlines, want a few (read and write, once each)", calls, n)
	}
}
