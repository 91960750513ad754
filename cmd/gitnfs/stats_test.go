package main

import (
	"net"
	"strings"
	"testing"
)

func TestStatsWithoutServerSaysHowToStartOne(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = run(t, "stats", "--addr", addr)
	if want := "gitnfs serve --metrics-addr " + addr; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("stats with no server: %v; want it to say %q", err, want)
	}
}
