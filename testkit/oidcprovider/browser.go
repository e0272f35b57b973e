package oidcprovider

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The two forms of oidc-provider's devInteractions (lib/views/login.js and
// lib/views/interaction.js): a POST to the interaction URL with a hidden
// prompt of "login" or "consent".
var (
	formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"[^>]*method="post"`)
	formPrompt = regexp.MustCompile(`name="prompt" value="(login|consent)"`)
)

// AuthorizationCodeLogin plays the browser of user for authURL (an
// authorization request of the authorization code flow, RFC 6749 section
// 4.1.1, to this provider): it follows the redirects, submits the login
// form as user (any password) and the consent form, and returns the
// redirect to the client's redirect_uri (with code, state and iss, RFC
// 9207) without fetching it. It fails the test on any other outcome.
func (p *Provider) AuthorizationCodeLogin(t testing.TB, authURL, user string) *url.URL {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := p.Login(ctx, authURL, user)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Login is AuthorizationCodeLogin returning its failure as an error (for a
// callback that runs outside the test's goroutine). An error answer of the
// provider (an error page, or a redirect carrying error=) is an error.
func (p *Provider) Login(ctx context.Context, authURL, user string) (*url.URL, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	issuer, err := url.Parse(p.Issuer)
	if err != nil {
		return nil, err
	}
	next, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	for step := 0; step < 20; step++ {
		resp, err := c.Do(next)
		if err != nil {
			return nil, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, fmt.Errorf("login: bad Location %q: %v", resp.Header.Get("Location"), err)
			}
			if loc.Host != issuer.Host {
				if e := loc.Query().Get("error"); e != "" {
					return loc, fmt.Errorf("login: the provider answered %s: %s", e, loc.Query().Get("error_description"))
				}
				return loc, nil
			}
			if next, err = http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil); err != nil {
				return nil, err
			}
		case resp.StatusCode == http.StatusOK:
			if next, err = submit(ctx, resp.Request.URL, string(body), user); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("login: %s %s: %d %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, text(body))
		}
	}
	return nil, fmt.Errorf("login: no redirect to the client after 20 steps")
}

// submit returns the POST of the login or consent form on page (at base).
func submit(ctx context.Context, base *url.URL, page, user string) (*http.Request, error) {
	a, pr := formAction.FindStringSubmatch(page), formPrompt.FindStringSubmatch(page)
	if a == nil || pr == nil {
		return nil, fmt.Errorf("login: %s is neither the login nor the consent form: %s", base, text([]byte(page)))
	}
	action, err := base.Parse(html.UnescapeString(a[1]))
	if err != nil {
		return nil, err
	}
	form := url.Values{"prompt": {pr[1]}}
	if pr[1] == "login" {
		form.Set("login", user)
		form.Set("password", "any")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// text is an HTML page cut to what a failure message needs.
var tags = regexp.MustCompile(`<[^>]*>|\s+`)

func text(b []byte) string {
	s := strings.TrimSpace(tags.ReplaceAllString(string(b), " "))
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
