package decl

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// dotenvNameRE is what a variable name of an envFile may be.
var dotenvNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseDotenv parses the envFile of a server entry (Cursor's and VS
// Code's "envFile"): a dotenv file, the format of docker's --env-file and
// of the dotenv libraries, read with these rules:
//
//   - one KEY=VALUE a line; KEY matches ^[A-Za-z_][A-Za-z0-9_]*$, and
//     may be preceded by "export "; spaces around "=" are dropped;
//   - blank lines and lines starting with "#" are comments;
//   - an unquoted VALUE runs to the end of the line, without the spaces
//     around it and without a comment that starts with " #";
//   - 'VALUE' is taken literally; "VALUE" takes the escapes \n \r \t \"
//     \\ and \$ (any other backslash is kept); either may span lines;
//     after the closing quote only spaces and a "# comment" may follow;
//   - nothing is expanded: "${X}" or "$X" in a value stays as it is
//     (the file never reads the host's environment);
//   - a KEY given twice takes its last value.
//
// A leading UTF-8 byte order mark and CRLF line ends are accepted.
// Errors: "line N: ..." for a line without "=", a bad name, an unclosed
// quote, text after a closing quote, a value with a NUL byte, or a file
// that is not UTF-8.
func ParseDotenv(data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	out := map[string]string{}
	line := 1
	for len(s) > 0 {
		cur, rest, _ := strings.Cut(s, "\n")
		start := line
		t := strings.TrimLeft(cur, " \t")
		if strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#") {
			s, line = rest, line+1
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		key, val, ok := strings.Cut(t, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", start)
		}
		if !dotenvNameRE.MatchString(key) {
			return nil, fmt.Errorf("line %d: %q is not a variable name (letters, digits and _, not starting with a digit)", start, key)
		}
		// The value may run on past this line when it is quoted: parse
		// it from the rest of the file.
		tail := strings.TrimLeft(val, " \t") + s[len(cur):]
		v, after, lines, err := dotenvValue(tail)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", start, err)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("line %d: the value of %s has a NUL byte", start, key)
		}
		out[key] = v
		s, line = after, line+lines
	}
	return out, nil
}

// dotenvValue parses the value at the start of s (the text after "=",
// then the rest of the file) and returns it, what follows its line, and
// how many lines it took.
func dotenvValue(s string) (v, after string, lines int, err error) {
	if s == "" || (s[0] != '"' && s[0] != '\'') {
		cur, rest, _ := strings.Cut(s, "\n")
		if i := strings.Index(cur, " #"); i >= 0 {
			cur = cur[:i]
		} else if i := strings.Index(cur, "\t#"); i >= 0 {
			cur = cur[:i]
		}
		return strings.TrimSpace(cur), rest, 1, nil
	}
	q := s[0]
	var b strings.Builder
	i := 1
	for ; i < len(s) && s[i] != q; i++ {
		c := s[i]
		if q == '"' && c == '\\' && i+1 < len(s) {
			if r, ok := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '"': '"', '\\': '\\', '$': '$'}[s[i+1]]; ok {
				b.WriteByte(r)
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	if i >= len(s) {
		return "", "", 0, fmt.Errorf("the %c quote does not close", q)
	}
	lines = 1 + strings.Count(s[:i], "\n")
	cur, rest, _ := strings.Cut(s[i+1:], "\n")
	if t := strings.TrimSpace(cur); t != "" && !strings.HasPrefix(t, "#") {
		return "", "", 0, fmt.Errorf("unexpected %q after the closing quote", t)
	}
	return b.String(), rest, lines, nil
}
