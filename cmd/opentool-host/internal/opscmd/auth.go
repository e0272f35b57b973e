package opscmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/declared/oauthlogin"
)

// LocalLogin is how "auth login" logs in when no host answers at --url
// (or with --local): Flags are the flags it reads, beside auth's; Run
// logs server name in by itself, giving show the authorization URL
// (which show prints, and opens in a browser unless --no-browser), and
// says where the token went. Errors: Run's, cli.Exit ones.
type LocalLogin struct {
	Flags []cli.Flag
	Run   func(c *cli.Context, name string, show func(authURL string)) error
}

// Auth is "opentool-host auth login|status|logout": the login step of
// the servers declared by URL with "oauth" of the authorization code
// grant, on the running host at --url (POST, GET /oauth/status, DELETE
// /oauth/login/NAME, with --api-key). The running host takes the code
// at its own /oauth/callback and uses the token at once. When no host
// answers at --url, or with --local, login is local's instead.
func Auth(local LocalLogin) *cli.Command {
	return &cli.Command{
		Name:      "auth",
		Usage:     "log the running host in to (or out of) a server declared by url with \"oauth\", or show its logins",
		ArgsUsage: "login NAME | status | logout NAME",
		UsageText: "opentool-host auth login NAME [--no-browser] [--wait] [--url http://127.0.0.1:9627] [--api-key KEY]\n" +
			"   opentool-host auth login NAME --local --dir plugins --secret NAME=file:PATH --oauth-token-key NAME [--state-dir DIR] [--principal P]\n" +
			"   opentool-host auth status\n" +
			"   opentool-host auth logout NAME",
		Description: "login prints the authorization URL of server NAME and opens it in a browser (xdg-open) unless\n" +
			"--no-browser; the running host takes the code at its /oauth/callback and uses the token at once.\n" +
			"When no host answers at --url (or with --local), login reads the declaration from --dir (and --mcp-config) as\n" +
			"run does, receives the code on a loopback listener of its own (http://127.0.0.1:PORT/callback, RFC 8252 7.3),\n" +
			"waits for the token and writes it into the sealed store of --state-dir with the key of --oauth-token-key,\n" +
			"which the next run with the same --dir, --state-dir and key uses; a host already running does not see it until restarted.\n" +
			"status says which servers have a token, its expiry and whether it refreshes (never the token);\n" +
			"logout forgets the token. Logging in and out needs a key that is not restricted (or no keys).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "url", Value: "http://127.0.0.1:9627", Usage: "base `URL` of the running host", EnvVars: []string{"OPENTOOL_URL"}},
			&cli.StringFlag{Name: "api-key", Usage: "send `KEY` as \"Authorization: Bearer KEY\"", EnvVars: []string{"OPENTOOL_API_KEY"}},
			&cli.BoolFlag{Name: "no-browser", Usage: "login: only print the URL (open it where a browser reaches the host's address)"},
			&cli.BoolFlag{Name: "wait", Usage: "login: wait until the login has a token (up to the 10 min login window)"},
			&cli.BoolFlag{Name: "local", Usage: "login: without a running host, on a loopback listener of its own (what login does when no host answers at --url)"},
		}, local.Flags...),
		Action: func(c *cli.Context) error {
			switch verb := c.Args().First(); verb {
			case "login":
				return authLogin(c, local)
			case "status":
				if c.NArg() != 1 {
					return cli.Exit("auth status: takes no NAME", 2)
				}
				return authStatus(c)
			case "logout":
				return authLogout(c)
			case "":
				return cli.Exit("auth: give login NAME, status or logout NAME (see --help)", 2)
			default:
				return cli.Exit(fmt.Sprintf("auth: unknown %q: give login NAME, status or logout NAME", verb), 2)
			}
		},
	}
}

// authRequest sends method path to the host of c and decodes its JSON
// answer into out. Errors (exit 1): the host unreachable, an answer
// that is not 200 (its "error").
func authRequest(c *cli.Context, method, path string, out any) error {
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader("{}") // the host's request guard wants a JSON body's Content-Type
	}
	req, err := http.NewRequestWithContext(c.Context, method, strings.TrimRight(c.String("url"), "/")+path, body)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if k := c.String("api-key"); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return noHost{cli.Exit(fmt.Sprintf("%s %s: %v (is the host running? run it with opentool-host run)", "auth", c.String("url"), err), 1)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error any `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		msg := fmt.Sprint(e.Error)
		if e.Error == nil {
			msg = string(bytes.TrimSpace(b))
		}
		if resp.StatusCode == http.StatusNotFound && e.Error == nil {
			msg = "this host has no login step (opentool-host run has it)"
		}
		return cli.Exit(fmt.Sprintf("auth %s: HTTP %d: %s", c.Args().First(), resp.StatusCode, msg), 1)
	}
	return json.Unmarshal(b, out)
}

// noHost is authRequest's error when no host answers at --url.
type noHost struct{ cli.ExitCoder }

// oneName is the one NAME argument after the verb.
func oneName(c *cli.Context) (string, error) {
	if c.NArg() != 2 {
		return "", cli.Exit("auth "+c.Args().First()+": give exactly one server NAME (see --help)", 2)
	}
	return c.Args().Get(1), nil
}

// authLogin is "auth login NAME": through the host at --url, else
// (no host answers, or --local) local's.
func authLogin(c *cli.Context, local LocalLogin) error {
	name, err := oneName(c)
	if err != nil {
		return err
	}
	show := func(u string) {
		fmt.Fprintf(c.App.Writer, "Open this URL to log in to %s:\n%s\n", name, u)
		if !c.Bool("no-browser") {
			if err := exec.Command("xdg-open", u).Start(); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "could not open a browser (%v): open the URL yourself\n", err)
			}
		}
	}
	if c.Bool("local") {
		if local.Run == nil {
			return cli.Exit("auth login --local: this build logs in through a running host only", 2)
		}
		return local.Run(c, name, show)
	}
	var got struct {
		URL string `json:"url"`
	}
	if err := authRequest(c, http.MethodPost, "/oauth/login/"+url.PathEscape(name), &got); err != nil {
		if _, down := err.(noHost); !down || local.Run == nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "no host answers at %s: logging in without one\n", c.String("url"))
		return local.Run(c, name, show)
	}
	show(got.URL)
	if !c.Bool("wait") {
		return nil
	}
	deadline := time.Now().Add(oauthlogin.LoginWindow)
	for time.Now().Before(deadline) {
		st, err := statusOf(c, name)
		if err != nil {
			return err
		}
		if st.LoggedIn {
			fmt.Fprintf(c.App.Writer, "logged in to %s\n", name)
			return nil
		}
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return cli.Exit("login: no token within the login window", 1)
}

// statusOf returns the status of server name on the host of c.
func statusOf(c *cli.Context, name string) (oauthlogin.Status, error) {
	var got struct {
		Servers []oauthlogin.Status `json:"servers"`
	}
	if err := authRequest(c, http.MethodGet, "/oauth/status", &got); err != nil {
		return oauthlogin.Status{}, err
	}
	for _, s := range got.Servers {
		if s.Server == name {
			return s, nil
		}
	}
	return oauthlogin.Status{}, cli.Exit(fmt.Sprintf("auth: %q: %v", name, oauthlogin.ErrUnknownServer), 1)
}

func authStatus(c *cli.Context) error {
	var got struct {
		Servers []oauthlogin.Status `json:"servers"`
	}
	if err := authRequest(c, http.MethodGet, "/oauth/status", &got); err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tTOKEN\tEXPIRES\tREFRESH")
	for _, s := range got.Servers {
		token, exp := "needs login: opentool-host auth login "+s.Server, "-"
		if s.LoggedIn {
			token = "yes"
			if !s.Expiry.IsZero() {
				exp = s.Expiry.UTC().Format(time.RFC3339)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%v\n", s.Server, token, exp, s.Refresh)
	}
	return w.Flush()
}

func authLogout(c *cli.Context) error {
	name, err := oneName(c)
	if err != nil {
		return err
	}
	var got struct{}
	if err := authRequest(c, http.MethodDelete, "/oauth/login/"+url.PathEscape(name), &got); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "logged out of %s\n", name)
	return nil
}
