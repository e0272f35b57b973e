package strictjson

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// str decodes the string whose opening quote is at d.pos and leaves d.pos
// past its closing quote.
//
// The fast path takes a string with no escape, no control character and
// only valid UTF-8 as a plain copy; every other string is decoded byte by
// byte exactly as encoding/json decodes it.
func (d *decoder) str() (string, error) {
	start := d.pos + 1
	rest := d.data[start:]
	if end := bytes.IndexByte(rest, '"'); end >= 0 && plain(rest[:end]) {
		d.pos = start + end + 1
		if d.skip {
			return "", nil
		}
		return string(rest[:end]), nil
	}
	return d.strSlow(start)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain reports whether s has no '\\', no byte below 0x20 and is valid
// UTF-8. It tests 8 bytes at a time and looks at single bytes only around
// a byte that needs it.
func plain(s []byte) bool {
	for i := 0; i < len(s); {
		if i+8 <= len(s) && !special(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
			continue
		}
		switch c := s[i]; {
		case c < 0x20 || c == '\\':
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return false
			}
			i += n
		}
	}
	return true
}

// special reports whether one of the 8 bytes of x is a '\\', below 0x20
// or not ASCII (exact as a yes/no answer: a borrow only starts at a byte
// below 0x20).
func special(x uint64) bool {
	bs := x ^ (ones * '\\')
	return ((bs-ones)&^bs|(x-ones*0x20)|x)&highs != 0
}

// strSlow decodes the string whose content starts at data[start] like
// encoding/json: escapes are decoded, a \u escape of a UTF-16 surrogate
// that is not followed by the escape of its pair becomes U+FFFD, and so
// does each byte of invalid UTF-8. Control characters, bad escapes and a
// missing closing quote are syntax errors.
func (d *decoder) strSlow(start int) (string, error) {
	data := d.data
	var buf []byte
	copied := false // buf holds the decoded content up to lit
	lit := start    // start of the bytes not yet copied to buf
	for i := start; ; {
		if i >= len(data) {
			return "", d.eof()
		}
		switch c := data[i]; {
		case c == '"':
			d.pos = i + 1
			if !copied {
				return string(data[start:i]), nil
			}
			return string(append(buf, data[lit:i]...)), nil
		case c == '\\':
			buf, copied = append(buf, data[lit:i]...), true
			n, err := d.escape(&buf, i)
			if err != nil {
				return "", err
			}
			i += n
			lit = i
		case c < 0x20:
			d.pos = i
			return "", d.badChar("in string literal")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				buf, copied = append(buf, data[lit:i]...), true
				buf = utf8.AppendRune(buf, utf8.RuneError)
				lit = i + 1
			}
			i += n
		}
	}
}

// escape decodes the escape whose backslash is at data[i], appending it
// to buf, and returns its length in bytes (2, 6, or 12 for a surrogate
// pair).
func (d *decoder) escape(buf *[]byte, i int) (int, error) {
	data := d.data
	if i+1 >= len(data) {
		return 0, d.eof()
	}
	switch c := data[i+1]; c {
	case '"', '\\', '/':
		*buf = append(*buf, c)
	case 'b':
		*buf = append(*buf, '\b')
	case 'f':
		*buf = append(*buf, '\f')
	case 'n':
		*buf = append(*buf, '\n')
	case 'r':
		*buf = append(*buf, '\r')
	case 't':
		*buf = append(*buf, '\t')
	case 'u':
		r, err := d.hex4(i + 2)
		if err != nil {
			return 0, err
		}
		if !utf16.IsSurrogate(r) {
			*buf = utf8.AppendRune(*buf, r)
			return 6, nil
		}
		if r2, ok := u4(data, i+6); ok {
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				*buf = utf8.AppendRune(*buf, pair)
				return 12, nil
			}
		}
		*buf = utf8.AppendRune(*buf, utf8.RuneError)
		return 6, nil
	default:
		d.pos = i + 1
		return 0, d.badChar("in string escape code")
	}
	return 2, nil
}

// hex4 reads the 4 hexadecimal digits of a \u escape at data[i:i+4].
func (d *decoder) hex4(i int) (rune, error) {
	var r rune
	for j := i; j < i+4; j++ {
		if j >= len(d.data) {
			return 0, d.eof()
		}
		h, ok := unhex(d.data[j])
		if !ok {
			d.pos = j
			return 0, d.badChar(`in \u hexadecimal character escape`)
		}
		r = r<<4 | h
	}
	return r, nil
}

// u4 reads a complete escape \uXXXX at data[i:i+6], if there is one.
func u4(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range data[i+2 : i+6] {
		h, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

func unhex(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10), true
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10), true
	}
	return 0, false
}
