package promisor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// pkt-line framing (gitprotocol-common(5)): four hex digits of length
// (the digits included), then the payload; 0000 is a flush, 0001 a
// delimiter, 0002 the end of a stateless response.
const (
	maxPktPayload = 65516 // LARGE_PACKET_DATA_MAX
	pktFlush      = "0000"
	pktDelim      = "0001"
)

// pktKind is what a read returned.
type pktKind int

const (
	pktData pktKind = iota
	pktFlushKind
	pktDelimKind
	pktResponseEnd
)

// appendPkt appends one data packet holding s.
func appendPkt(b []byte, s string) []byte {
	if len(s) > maxPktPayload {
		panic("pkt-line payload too long") // our own requests only
	}
	b = append(b, fmt.Sprintf("%04x", len(s)+4)...)
	return append(b, s...)
}

// pktReader reads packets.
type pktReader struct {
	r   *bufio.Reader
	buf [maxPktPayload]byte
}

func newPktReader(r io.Reader) *pktReader { return &pktReader{r: bufio.NewReader(r)} }

// errRemote is an ERR packet: the server refused.
type errRemote struct{ msg string }

func (e *errRemote) Error() string { return "remote error: " + e.msg }

// read returns the next packet. The payload is valid until the next read;
// a trailing newline is kept (callers trim it: git sends lines both ways).
func (p *pktReader) read() ([]byte, pktKind, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(p.r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("protocol error: bad pkt-line length %q", hdr[:])
	}
	switch n {
	case 0:
		return nil, pktFlushKind, nil
	case 1:
		return nil, pktDelimKind, nil
	case 2:
		return nil, pktResponseEnd, nil
	case 3:
		return nil, 0, fmt.Errorf("protocol error: bad pkt-line length %q", hdr[:])
	}
	if n-4 > maxPktPayload {
		return nil, 0, fmt.Errorf("protocol error: pkt-line of %d bytes", n)
	}
	b := p.buf[:n-4]
	if _, err := io.ReadFull(p.r, b); err != nil {
		return nil, 0, fmt.Errorf("protocol error: truncated pkt-line: %w", err)
	}
	if len(b) >= 4 && string(b[:4]) == "ERR " {
		return nil, 0, &errRemote{msg: string(trimLF(b[4:]))}
	}
	return b, pktData, nil
}

// readLines reads data packets up to a flush or a delimiter, each without
// its trailing newline.
func (p *pktReader) readLines() (lines []string, err error) {
	for {
		b, kind, err := p.read()
		if err != nil {
			return lines, err
		}
		switch kind {
		case pktFlushKind, pktResponseEnd, pktDelimKind:
			return lines, nil
		}
		lines = append(lines, string(trimLF(b)))
	}
}

func trimLF(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}
