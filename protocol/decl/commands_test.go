package decl

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCommandsExample(t *testing.T) {
	c, err := ParseCommands([]byte(`{"description":"d","functions":[
		{"name":"grep_lines","description":"g","parameters":[
			{"name":"pattern","schema":{"type":"string"},"required":true},
			{"name":"i","schema":{"type":"boolean"},"required":false}],
		 "command":["grep",{"flag":"-i","when":"i"},"-e","{pattern}"],"ok_exit_codes":[0,1],"timeout_ms":100}]}`))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Functions[0]
	if len(f.Argv) != 4 || f.Argv[1].Flag != "-i" || f.Argv[3].Template != "{pattern}" || f.TimeoutMS != 100 {
		t.Fatalf("parsed %+v", f)
	}
	doc := c.Document("text")
	if doc.Info.Title != "text" || doc.Functions[0].AdditionalParameters == nil || *doc.Functions[0].AdditionalParameters {
		t.Fatalf("document %+v", doc)
	}
}

func TestParseCommandsFaultsHaveJSONPaths(t *testing.T) {
	fn := func(extra string) string {
		return `{"functions":[{"name":"f","description":"d","parameters":[{"name":"p","schema":{"type":"string"},"required":true},{"name":"b","schema":{"type":"boolean"},"required":false}],` + extra + `}]}`
	}
	for _, tc := range []struct{ in, want string }{
		{`[]`, "$: must be a JSON object"},
		{`{"name":"f","description":"d","command":["x"]}`, `$: one function entry, not a whole NAME.tools.json: a whole file is {"description": "...", "functions": [ENTRY, ...]}`},
		{`[{"name":"f","description":"d","command":["x"]}]`, "$: a list of function entries, not a whole NAME.tools.json"},
		{`{"functions":[]}`, "$.functions: declare at least one function"},
		{fn(`"command":["x"],"bogus":1`), `$.functions[0].bogus: unknown member`},
		{fn(`"command":[]`), "$.functions[0].command: must name the program"},
		{fn(`"command":["{p}"]`), "$.functions[0].command[0]: the program must be a literal"},
		{fn(`"command":["x","--a={q}"]`), `$.functions[0].command[1]: unknown parameter "q"`},
		{fn(`"command":["x",{"flag":"-i","when":"p"}]`), `$.functions[0].command[1].when: "p" is not a boolean parameter`},
		{fn(`"command":["x",{"flag":"-i"}]`), `must be a string or {"flag"`},
		{fn(`"command":["x"],"stdin":"b"`), `$.functions[0].stdin: "b" is not a string parameter`},
		{fn(`"command":["x"],"timeout_ms":9999999`), "$.functions[0].timeout_ms: must be between"},
		{fn(`"command":["x"],"output":"xml"`), `$.functions[0].output: must be "text" or "json"`},
		{fn(`"command":["x"],"env":["OPENTOOL_API_KEYS"]`), `$.functions[0].env[0]`},
		{fn(`"command":["x"],"timeout_ms":"5s"`), "$.functions.timeout_ms: must be an integer"},
		{`{"functions":[{"name":"bad name","description":"d","command":["x"]}]}`, "$.functions[0].name"},
		{`{"functions":[{"name":"f","description":"d","command":["x"]}],"functions":[]}`, "duplicate"},
	} {
		_, err := ParseCommands([]byte(tc.in))
		if err == nil || !strings.Contains(faultText(err), tc.want) {
			t.Errorf("ParseCommands(%s)\n got %v\nwant %q", tc.in, err, tc.want)
		}
	}
}

// faultText is err as "PATH: MESSAGE" when it is a *Fault (its line,
// column and excerpt left out: TestFaultsHaveLineAndColumn tests them),
// else its Error.
func faultText(err error) string {
	var f *Fault
	if errors.As(err, &f) {
		return f.Path + ": " + f.Message
	}
	return err.Error()
}
