package gitattr

import (
	"bytes"
	"math"
	"strings"
)

// The attributes file format (attr.c, git 2.39).

type rawAttrLine struct {
	macro  string // a macro definition "[attr]NAME ..."; else pat applies
	pat    attrPattern
	states []rawAttrSet
}

type rawAttrSet struct {
	name string
	v    attrValue
}

const attrBlank = " \t\r\n"

// parseAttrs parses an attributes file as git reads one from a work tree:
// lines split at LF (a CR before it dropped), a UTF-8 BOM skipped, each
// line ending at a NUL byte; [attr] macros only where macroOK.
func parseAttrs(data []byte, macroOK bool) []rawAttrLine {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var out []rawAttrLine
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if l, ok := parseAttrLine(string(line), macroOK); ok {
			out = append(out, l)
		}
	}
	return out
}

func cspan(s, set string) int {
	if i := strings.IndexAny(s, set); i >= 0 {
		return i
	}
	return len(s)
}

func trimBlank(s string) string { return strings.TrimLeft(s, attrBlank) }

// parseAttrLine is parse_attr_line.
func parseAttrLine(line string, macroOK bool) (rawAttrLine, bool) {
	cp := trimBlank(line)
	if cp == "" || cp[0] == '#' {
		return rawAttrLine{}, false
	}
	if len(line) >= attrMaxLineLength {
		return rawAttrLine{}, false
	}
	var name, states string
	quoted := false
	if cp[0] == '"' {
		name, states, quoted = unquoteC(cp)
	}
	if !quoted {
		n := cspan(cp, attrBlank)
		name, states = cp[:n], cp[n:]
	}
	var l rawAttrLine
	const macroPrefix = "[attr]"
	if len(name) > len(macroPrefix) && strings.HasPrefix(name, macroPrefix) {
		if !macroOK {
			return rawAttrLine{}, false
		}
		m := trimBlank(name[len(macroPrefix):])
		m = m[:cspan(m, attrBlank)]
		if !attrNameValid(m) {
			return rawAttrLine{}, false
		}
		l.macro = m
	}
	for states = trimBlank(states); states != ""; {
		ep := cspan(states, attrBlank)
		tok := states[:ep]
		states = trimBlank(states[ep:])
		attr, value, hasValue := strings.Cut(tok, "=")
		v := attrValue{k: avTrue}
		switch {
		case attr != "" && attr[0] == '-':
			attr, v = attr[1:], attrValue{k: avFalse}
		case attr != "" && attr[0] == '!':
			attr, v = attr[1:], attrValue{k: avUnspecified}
		case hasValue:
			v = attrValue{k: avString, s: value}
		}
		if !attrNameValid(attr) {
			return rawAttrLine{}, false // git rejects the whole line
		}
		l.states = append(l.states, rawAttrSet{name: attr, v: v})
	}
	if l.macro == "" {
		p, ok := parsePattern(name)
		if !ok {
			return rawAttrLine{}, false
		}
		l.pat = p
	}
	return l, true
}

// attrNameValid is attr_name_valid: [-A-Za-z0-9_.]+, not starting with '-'.
func attrNameValid(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '-' && c != '.' && c != '_' && !('0' <= c && c <= '9') && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// unquoteC is unquote_c_style: s starts with '"'; ok is false when s is
// not a valid C-quoted string (git then reads the pattern unquoted).
func unquoteC(s string) (name, rest string, ok bool) {
	var b strings.Builder
	i := 1
	for {
		j := i + cspan(s[i:], "\"\\")
		b.WriteString(s[i:j])
		if j >= len(s) {
			return "", "", false
		}
		i = j + 1
		if s[j] == '"' {
			return b.String(), s[i:], true
		}
		if i >= len(s) {
			return "", "", false
		}
		c := s[i]
		i++
		switch c {
		case 'a':
			c = '\a'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		case '\\', '"':
		case '0', '1', '2', '3':
			if i+2 > len(s) || s[i] < '0' || s[i] > '7' || s[i+1] < '0' || s[i+1] > '7' {
				return "", "", false
			}
			c = (c-'0')<<6 | (s[i]-'0')<<3 | (s[i+1] - '0')
			i += 2
		default:
			return "", "", false
		}
		b.WriteByte(c)
	}
}

// cAtoi is C's atoi as glibc has it: (int)strtol(s, NULL, 10).
func cAtoi(s string) int {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if v > (math.MaxUint64-9)/10 {
			v = math.MaxUint64 // strtol saturates
		} else {
			v = v*10 + uint64(s[i]-'0')
		}
	}
	var l int64
	switch {
	case neg && v > math.MaxInt64:
		l = math.MinInt64
	case neg:
		l = -int64(v)
	case v > math.MaxInt64:
		l = math.MaxInt64
	default:
		l = int64(v)
	}
	return int(int32(l)) // (int)long keeps the low 32 bits
}
