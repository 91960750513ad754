package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

func TestRunAsDropsToTheUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to change uid")
	}
	// runAs itself, on a shell printing its ids, with its exit code.
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	code, err := runAs("65534:65533", []string{"/bin/sh", "-c", "id -u; id -g; id -G; exit 7"})
	os.Stdout = stdout
	w.Close()
	got, _ := io.ReadAll(r)
	if err != nil || code != 7 {
		t.Fatalf("runAs: code %d, err %v, want 7", code, err)
	}
	if string(got) != "65534\n65533\n65533\n" {
		t.Fatalf("ids %q, want uid 65534, gid 65533 and no other group", got)
	}
	if _, err := runAs("x", []string{"true"}); err == nil {
		t.Fatal("runAs accepted ids without a gid")
	}
}

func TestForwardJoinsBothDirections(t *testing.T) {
	// The target answers what it read once the client has sent three lines,
	// then closes: the fsmonitor service's shape.
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		c, err := target.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		var got []string
		for i := 0; i < 3; i++ {
			l, _ := r.ReadString('\n')
			got = append(got, strings.TrimSpace(l))
		}
		io.WriteString(c, "answer:"+strings.Join(got, ","))
		c.Close()
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	go forward(addr, target.Addr().String())
	var c net.Conn
	for i := 0; i < 100; i++ {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "a\nb\nc\n")
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "answer:a,b,c" {
		t.Fatalf("through the forward: %q, %v", got, err)
	}
}
