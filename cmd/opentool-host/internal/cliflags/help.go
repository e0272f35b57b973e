package cliflags

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
)

// Help's layout: each flag's names in a column NameWidth wide, its usage
// beside them wrapped to HelpWidth columns; names wider than the column
// get a line of their own, the usage below them in the usage column.
const (
	// HelpWidth is the width, in columns, of every flag line of the help.
	HelpWidth = 80
	// NameWidth is the width of the column of flag names.
	NameWidth = 28
	// helpIndent is what urfave/cli's help template writes before a flag.
	helpIndent = 3
)

// Categorize sets the urfave/cli Category of each of flags that
// categories names (its first name: the category), so that the help
// shows the flags under a heading per category; flags it does not name
// keep theirs ("" comes first, without a heading). It returns flags.
func Categorize(flags []cli.Flag, categories map[string]string) []cli.Flag {
	for _, f := range flags {
		if cat, ok := categories[f.Names()[0]]; ok {
			setField(f, "Category", cat)
		}
	}
	return flags
}

// Hide hides the flags of flags named in names from the help (Hidden):
// a command still takes them, with their defaults, so that command
// lines that give them keep working. It returns flags.
func Hide(flags []cli.Flag, names ...string) []cli.Flag {
	for _, f := range flags {
		for _, n := range names {
			if f.Names()[0] == n {
				setField(f, "Hidden", true)
			}
		}
	}
	return flags
}

// setField sets the field name of the urfave/cli flag struct f points to
// (every flag type of urfave/cli v2 has Category and Hidden). It panics
// for a flag without it: a programming error the help tests catch.
func setField(f cli.Flag, name string, v any) {
	field := reflect.ValueOf(f).Elem().FieldByName(name)
	if !field.IsValid() || !field.CanSet() {
		panic(fmt.Sprintf("cliflags: flag %T has no field %s", f, name))
	}
	field.Set(reflect.ValueOf(v))
}

// narrowFlags returns the FlagStringer that lays out what plain (urfave's
// own stringer: "NAMES\tUSAGE") returns in the columns of NameWidth and
// HelpWidth, with no tab left for the help's tabwriter to widen.
func narrowFlags(plain cli.FlagStringFunc) cli.FlagStringFunc {
	return func(f cli.Flag) string {
		names, usage, _ := strings.Cut(plain(f), "\t")
		names, _, _ = strings.Cut(names, " [ ") // a repeatable flag's "[ --NAME V ]": its usage says so
		pad := strings.Repeat(" ", helpIndent+NameWidth+2)
		lines := wrap(usage, HelpWidth-len(pad))
		var b strings.Builder
		if len(names) > NameWidth {
			b.WriteString(names + "\n" + pad)
		} else {
			b.WriteString(names + strings.Repeat(" ", NameWidth+2-len(names)))
		}
		b.WriteString(strings.Join(lines, "\n"+pad))
		return b.String()
	}
}

// unwrappedFlags is the help template tmpl with its flags written as
// narrowFlags lays them out when none has a category too (urfave/cli's
// own template would wrap them again, with its own indent).
func unwrappedFlags(tmpl string) string {
	return strings.ReplaceAll(tmpl, `{{template "visibleFlagTemplate" .}}`, `{{range .VisibleFlags}}
   {{.}}{{end}}`)
}

// wrapLines is text reflowed to width: a run of lines is one paragraph,
// wrapped (wrap), up to a line that ends a sentence or a list's lead-in
// ("." or ":") or that the next, indented, line follows; an indented line
// (a table row) and a line that fits stay as they are.
func wrapLines(text string, width int) string {
	lines := strings.Split(text, "\n")
	var out []string
	para := ""
	for i, l := range lines {
		if strings.HasPrefix(l, " ") {
			out = append(out, l)
			continue
		}
		para = strings.TrimSpace(para + " " + l)
		next := i+1 < len(lines) && !strings.HasPrefix(lines[i+1], " ")
		if next && !strings.HasSuffix(l, ".") && !strings.HasSuffix(l, ":") {
			continue
		}
		out = append(out, wrap(para, width)...)
		para = ""
	}
	return strings.Join(out, "\n")
}

// wrap splits s into lines of at most width columns at spaces; a word
// longer than width is split after a comma, else is a line of its own.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		for len(w) > width && strings.LastIndex(w[:width], ",") > 0 {
			cut := strings.LastIndex(w[:width], ",") + 1
			if line != "" {
				lines = append(lines, line)
			}
			line, w = w[:cut], w[cut:]
		}
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}
