package decl

import "errors"

// stripJSONC returns b with the two things JSON with comments (JSONC,
// what VS Code writes and reads for mcp.json and settings.json) adds to
// JSON made blank: comments ("// ..." to the end of the line, "/* ...
// */") and a comma before a closing "}" or "]". Each such byte becomes a
// space (a newline stays a newline), so offsets and line numbers of
// later syntax errors are those of the file. Strings are copied as they
// are. b itself is never changed. Errors: a "/*" comment that does not
// end.
func stripJSONC(b []byte) ([]byte, error) {
	var out []byte // nil until something changes
	blank := func(i int) {
		if out == nil {
			out = append([]byte(nil), b...)
		}
		if out[i] != '\n' && out[i] != '\r' {
			out[i] = ' '
		}
	}
	lastComma := -1 // offset of a comma outside strings that nothing but space and comments followed yet
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				blank(i)
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			start := i
			for i += 2; i+1 < len(b) && (b[i] != '*' || b[i+1] != '/'); i++ {
			}
			if i+1 >= len(b) {
				return nil, errors.New("a /* comment does not end")
			}
			for j := start; j <= i+1; j++ {
				blank(j)
			}
			i++
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				blank(lastComma)
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	if out == nil {
		return b, nil
	}
	return out, nil
}
