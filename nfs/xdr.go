package nfs

import (
	"encoding/binary"
	"errors"
)

// Hand-written XDR for the procedures we own. go-nfs encodes by reflection,
// which costs an allocation per field; here an encoder is an append-only
// byte slice and a decoder a bounds-checked cursor, so a malformed request
// can only ever produce errGarbage, never a panic or a huge allocation: every
// length is checked against the bytes actually left in the record.

var errGarbage = errors.New("xdr: malformed arguments")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint32() uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.err = errGarbage
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errGarbage
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// opaque reads variable-length opaque data of at most max bytes. The result
// aliases the record buffer.
func (d *decoder) opaque(max int) []byte {
	n := d.uint32()
	if d.err != nil {
		return nil
	}
	padded := (uint64(n) + 3) &^ 3
	if uint64(n) > uint64(max) || padded > uint64(len(d.b)) {
		d.err = errGarbage
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[padded:]
	return v
}

func (d *decoder) fixed(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.err = errGarbage
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

type encoder struct{ b []byte }

func (e *encoder) uint32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) uint64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }

func (e *encoder) bool(v bool) {
	if v {
		e.uint32(1)
	} else {
		e.uint32(0)
	}
}

func (e *encoder) string(v string) {
	e.uint32(uint32(len(v)))
	e.b = append(e.b, v...)
	e.pad(len(v))
}

func (e *encoder) pad(n int) {
	if r := n & 3; r != 0 {
		e.b = append(e.b, make([]byte, 4-r)...)
	}
}

// xdrLen is the encoded size of variable-length opaque data of n bytes.
func xdrLen(n int) int { return 4 + (n+3)&^3 }
