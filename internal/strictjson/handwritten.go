package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// HandWritten is a JSON file a person writes (a declaration, a policy,
// a desktop client's config, the keys file), as ReadHandWritten parsed
// it: JSON with comments ("// ..." and "/* ... */") and trailing commas,
// as VS Code's configs are. Its faults say where they are: line, column,
// and the line itself with a caret (Fault.Line, Column, Excerpt).
type HandWritten struct {
	data []byte       // as read
	std  []byte       // data as standard JSON: comments and trailing commas blanked, same offsets
	ast  hujson.Value // data's syntax tree, for the places of JSON paths
}

// ReadHandWritten parses data, a hand-written file of at most maxBytes
// bytes, with github.com/tailscale/hujson (comments and trailing commas
// allowed), into standard JSON of the same length (each comment and
// trailing comma a space), which Tree, Check and Decode then decode
// exactly. Errors: a *Fault at "$" for a file that is too large, or a
// syntax error at its line and column.
func ReadHandWritten(data []byte, maxBytes int) (*HandWritten, error) {
	if len(data) > maxBytes {
		return nil, &Fault{Path: "$", Message: fmt.Sprintf("the file is larger than %d bytes", maxBytes)}
	}
	ast, err := hujson.Parse(data)
	if err != nil {
		return nil, syntaxFault(data, err)
	}
	ast.Standardize()
	return &HandWritten{data: data, std: ast.Pack(), ast: ast}, nil
}

// ParseHandWritten is how every hand-written file is read: data (at most
// maxBytes) by ReadHandWritten, then parse of it (which decodes it with
// Tree, Check or Decode and checks what it holds), a *Fault of parse
// given its line and column (Locate). Errors (with T's zero value):
// ReadHandWritten's, or parse's, located.
func ParseHandWritten[T any](data []byte, maxBytes int, parse func(*HandWritten) (T, error)) (T, error) {
	h, err := ReadHandWritten(data, maxBytes)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(h)
	if err != nil {
		var zero T
		return zero, h.Locate(err)
	}
	return v, nil
}

// JSON returns the file as standard JSON: comments and trailing commas
// replaced by spaces, every other byte where it was.
func (h *HandWritten) JSON() []byte { return h.std }

// Tree decodes the file as Decode does (values as encoding/json puts
// them in an any, json.Number for numbers). Errors: a *Fault with its
// line and column (a member given twice, at its second name).
func (h *HandWritten) Tree() (any, error) {
	tree, err := Decode(h.std)
	var de *DuplicateError
	var se *SyntaxError
	switch {
	case errors.As(err, &de):
		return nil, h.at(&Fault{Path: Rooted(de.MemberPath()), Message: "duplicate member"}, int(de.Offset))
	case errors.As(err, &se):
		return nil, h.at(&Fault{Path: "$", Message: se.What()}, int(se.Offset))
	case err != nil:
		return nil, &Fault{Path: "$", Message: err.Error()}
	}
	return tree, nil
}

// Check checks the file as one JSON object of Go type t (a struct) with
// no member t does not declare, and returns Tree's tree. Errors: a
// *Fault, located (Locate).
func (h *HandWritten) Check(t reflect.Type) (any, error) {
	tree, err := h.Tree()
	if err != nil {
		return nil, err
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, h.Locate(&Fault{Path: "$", Message: "must be a JSON object"})
	}
	if err := CheckMembers(tree, t); err != nil {
		var ue *UnknownMemberError
		if errors.As(err, &ue) {
			return nil, h.Locate(&Fault{Path: Rooted(ue.MemberPath()), Message: "unknown member"})
		}
		return nil, &Fault{Path: "$", Message: err.Error()}
	}
	return tree, nil
}

// Decode decodes the file into v (a pointer to a struct) after Check.
// Errors: a *Fault, located; a member of the wrong type says which JSON
// type it must be ("$.timeout_ms: must be an integer").
func (h *HandWritten) Decode(v any) error {
	if _, err := h.Check(reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	if err := json.Unmarshal(h.std, v); err != nil {
		return h.Locate(TypeFault("$", err))
	}
	return nil
}

// Locate returns err with the line and column of its place in the file
// when err is a *Fault whose JSON path names a member or element of it
// (its name, or the element's first character) and that has no line
// yet; any other err as it is.
func (h *HandWritten) Locate(err error) error {
	var f *Fault
	if !errors.As(err, &f) || f.Line > 0 {
		return err
	}
	off, ok := h.offsetOf(f.Path)
	if !ok {
		return err
	}
	return h.at(f, off)
}

// at sets f's line, column and excerpt to those of byte offset off and
// returns f.
func (h *HandWritten) at(f *Fault, off int) *Fault {
	f.Line, f.Column, f.Excerpt = position(h.data, off)
	return f
}

// offsetOf returns the offset of the value at JSON path p ("$.a.b[2]",
// `$["x y"]`): for a member, that of its name's opening quote. ok is
// false when p does not parse or names nothing in the file.
func (h *HandWritten) offsetOf(p string) (off int, ok bool) {
	segs, ok := parsePath(p)
	if !ok {
		return 0, false
	}
	v, off := &h.ast, h.ast.StartOffset
	for _, s := range segs {
		switch c := v.Value.(type) {
		case *hujson.Object:
			if s.isIndex {
				return 0, false
			}
			found := false
			for i := range c.Members {
				m := &c.Members[i]
				if lit, isLit := m.Name.Value.(hujson.Literal); isLit && lit.String() == s.key {
					v, off, found = &m.Value, m.Name.StartOffset, true
					break
				}
			}
			if !found {
				return 0, false
			}
		case *hujson.Array:
			if !s.isIndex || s.index >= len(c.Elements) {
				return 0, false
			}
			v = &c.Elements[s.index]
			off = v.StartOffset
		default:
			return 0, false
		}
	}
	return off, true
}

// parsePath splits a JSON path as render writes it, rooted at "$"
// ("$.a", `$["b c"]`, "$.tags[2]"), into its segments, root first.
func parsePath(p string) ([]segment, bool) {
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil, false
	}
	var segs []segment
	for rest != "" {
		switch {
		case rest[0] == '.':
			end := 1
			for end < len(rest) && rest[end] != '.' && rest[end] != '[' {
				end++
			}
			segs = append(segs, segment{key: rest[1:end]})
			rest = rest[end:]
		case strings.HasPrefix(rest, `["`):
			q, err := strconv.QuotedPrefix(rest[1:])
			if err != nil || !strings.HasPrefix(rest[1+len(q):], "]") {
				return nil, false
			}
			key, _ := strconv.Unquote(q)
			segs = append(segs, segment{key: key})
			rest = rest[2+len(q):]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			n, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil || n < 0 {
				return nil, false
			}
			segs = append(segs, segment{index: n, isIndex: true})
			rest = rest[end+1:]
		default:
			return nil, false
		}
	}
	return segs, true
}

// syntaxFault is the *Fault of hujson's parse error err on data: its
// message ("hujson: line L, column C: MSG", C in bytes) as a fault at
// that place, MSG without the character it quotes (the excerpt shows
// where); an end too early is "unexpected end of JSON input", or "a /*
// comment does not end".
func syntaxFault(data []byte, err error) *Fault {
	var line, col int
	msg := err.Error()
	if _, serr := fmt.Sscanf(msg, "hujson: line %d, column %d:", &line, &col); serr != nil {
		return &Fault{Path: "$", Message: msg}
	}
	_, msg, _ = strings.Cut(msg, ": ")
	_, msg, _ = strings.Cut(msg, ": ")
	switch {
	case strings.HasPrefix(msg, "parsing comment: "):
		msg = "a /* comment does not end"
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "unexpected end of JSON input" // encoding/json's words
	}
	f := &Fault{Path: "$", Message: blindChar(msg)}
	off := 0
	for i := 1; i < line; i++ {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	f.Line, f.Column, f.Excerpt = position(data, min(off+col-1, len(data)))
	return f
}

// blindChar drops what a message of hujson quotes of the file: the
// character of "invalid character 'x' WHERE" ("invalid character
// WHERE"), the word of "invalid literal: WORD".
func blindChar(msg string) string {
	if strings.HasPrefix(msg, "invalid literal: ") {
		return "invalid literal (a string or a member name needs double quotes)"
	}
	rest, ok := strings.CutPrefix(msg, "invalid character ")
	if !ok {
		return msg
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		return "invalid character" + rest[len(q):]
	}
	return msg
}

// maxExcerpt is the most characters of a line an excerpt shows; a longer
// line is cut around the column, "…" marking each cut.
const maxExcerpt = 120

// position returns the line and column (1-based; the column counts
// characters, a tab as one) of byte offset off in data, and the excerpt
// of its place: the line, with each string value's characters shown as
// '*' (hidden: a value may be a secret; member names are shown), then a caret
// under the column (the tabs before it kept, so that it lines up
// whatever the tab width). No excerpt for a file whose first character
// is not JSON: nothing of a file that is not JSON is quoted.
func position(data []byte, off int) (line, col int, excerpt string) {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	line = 1 + bytes.Count(data[:start], []byte("\n"))
	col = 1 + utf8.RuneCount(data[start:off])
	if len(bytes.TrimLeft(data[:off], " \t\r\n")) == 0 {
		return line, col, "" // the first character is not JSON (or the file is empty)
	}
	end := bytes.IndexByte(data[start:], '\n')
	if end < 0 {
		end = len(data) - start
	}
	text := []rune(strings.TrimRight(masked(data, start, start+end), "\r"))
	at := col - 1
	if len(text) > maxExcerpt {
		from := max(0, min(at-maxExcerpt/2, len(text)-maxExcerpt))
		cut := string(text[from : from+maxExcerpt])
		if from > 0 {
			cut, at = "…"+cut, at-from+1
		}
		if from+maxExcerpt < len(text) {
			cut += "…"
		}
		text = []rune(cut)
	}
	var caret strings.Builder
	for i := 0; i < at && i < len(text); i++ {
		if text[i] == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	return line, col, string(text) + "\n" + caret.String()
}

// masked returns data[start:end], a line of data, with each character
// an excerpt does not show as '*' (hidden), so that the line keeps its
// number of characters.
func masked(data []byte, start, end int) string {
	hide := hidden(data[:end])
	var b strings.Builder
	for i := start; i < end; {
		_, n := utf8.DecodeRune(data[i:end])
		if hide[i] {
			b.WriteByte('*')
		} else {
			b.Write(data[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden marks the bytes of data an excerpt does not show, as what may
// be a secret: the characters of string values (member names are
// shown), of comments (their "//", "/*" and "*/" are shown) and of bare
// words other than true, false, null and numbers; a comment's spaces
// are shown.
func hidden(data []byte) []bool {
	hide := make([]bool, len(data))
	mark := func(from, to int, spaces bool) { // a comment's spaces stay
		for k := from; k < min(to, len(data)); k++ {
			hide[k] = !spaces || !strings.ContainsRune(" \t\r\n", rune(data[k]))
		}
	}
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			end := skipString(data, i, len(data))
			if !isName(data, i) {
				mark(i+1, end, false)
			}
			i = end + 1
		case bytes.HasPrefix(data[i:], []byte("//")):
			end := bytes.IndexByte(data[i:], '\n')
			if end < 0 {
				end = len(data) - i
			}
			mark(i+2, i+end, true)
			i += end
		case bytes.HasPrefix(data[i:], []byte("/*")):
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				end = len(data) - i - 2
			}
			mark(i+2, i+2+end, true)
			i += end + 4
		case isWordByte(c):
			end := i
			for end < len(data) && isWordByte(data[end]) {
				end++
			}
			if !plainWord(string(data[i:end])) {
				mark(i, end, false)
			}
			i = end
		default:
			i++
		}
	}
	return hide
}

// isWordByte reports whether c is part of a bare word: not JSON's
// punctuation, a space, a quote or a slash.
func isWordByte(c byte) bool {
	return !strings.ContainsRune("{}[]:,\" /\t\r\n", rune(c))
}

// plainWord reports whether w, a bare word, is one JSON has: true,
// false, null or a number.
func plainWord(w string) bool {
	if w == "true" || w == "false" || w == "null" {
		return true
	}
	_, err := strconv.ParseFloat(w, 64)
	return err == nil && (w[0] == '-' || w[0] >= '0' && w[0] <= '9')
}

// skipString returns the offset of the closing quote of the string
// opening at data[i] (a line's end or end, when it does not close
// before).
func skipString(data []byte, i, end int) int {
	for i++; i < end; i++ {
		switch data[i] {
		case '\\':
			i++
		case '"', '\n':
			return i
		}
	}
	return end
}

// isName reports whether the string opening at data[i] is a member name:
// only spaces between its closing quote and a ':'.
func isName(data []byte, i int) bool {
	j := skipString(data, i, len(data)) + 1
	for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
		j++
	}
	return j < len(data) && data[j] == ':'
}
