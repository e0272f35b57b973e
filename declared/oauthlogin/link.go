package oauthlogin

import "time"

// Link returns the authorization URL of the login begun for server and
// principal that still waits for its person (within ReuseWindow, its
// response not yet received), "" when none does. It begins none: a page
// that shows it may be read often.
func (r *Registry) Link(server, principal string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.open[[2]string{server, principal}]; ok && time.Now().Before(o.until) {
		return o.url
	}
	return ""
}
