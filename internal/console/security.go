package console

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Names of the console's cookie and CSRF header.
const (
	// CookieName holds the token once the login form (or ?token=) was used.
	CookieName = "skillbus_console"
	// ActionHeader must be present on every POST: a page of another origin
	// cannot add a custom header without a CORS preflight, which the
	// console never grants, so its forged requests are refused.
	ActionHeader = "X-Skillbus-Console"
)

// contentSecurityPolicy allows the page's own scripts, styles and
// connections only: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// secure wraps the console's handler with its checks, in order:
//   - Host: on a loopback address only loopback host names are answered
//     (a DNS-rebinding page would send its own host name);
//   - the token, when one is set (login form, ?token=, cookie or bearer);
//   - for POST: the ActionHeader, a JSON body (or the login form), and an
//     Origin (when the browser sends one) equal to the console's own;
//   - security headers on every answer.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")

		if s.loopback && !loopbackHost(r.Host) {
			http.Error(w, "skillbus console: this console answers only to localhost, 127.0.0.1 or [::1] (the Host header was "+quoteHost(r.Host)+"); open it as the URL skillbus printed", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodDelete || r.Method == http.MethodPatch {
			if !sameOrigin(r) {
				writeErr(w, http.StatusForbidden, "", "this request came from another web site (Origin "+r.Header.Get("Origin")+"); the console accepts actions only from its own pages")
				return
			}
			if r.URL.Path != "/login" {
				if r.Header.Get(ActionHeader) == "" {
					writeErr(w, http.StatusForbidden, "", "missing the "+ActionHeader+" header: actions are sent by the console's own page (this protects against requests forged by other sites)")
					return
				}
				if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					writeErr(w, http.StatusUnsupportedMediaType, "", "send a JSON body with Content-Type: application/json")
					return
				}
			}
		}
		if s.cfg.Token != "" && !public(r.URL.Path) {
			if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
				if !s.tokenOK(t) {
					s.loginPage(w, r, "That token is not the console's token.")
					return
				}
				s.setCookie(w, r, t)
				u := *r.URL
				q := u.Query()
				q.Del("token")
				u.RawQuery = q.Encode()
				http.Redirect(w, r, u.String(), http.StatusSeeOther)
				return
			}
			if !s.authorized(r) {
				if strings.HasPrefix(r.URL.Path, "/api/") {
					writeErr(w, http.StatusUnauthorized, "", "this console needs its token: open the URL skillbus printed, or log in on the console's page")
					return
				}
				s.loginPage(w, r, "")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// public reports whether path is served without the token: the login
// form and what it shows.
func public(path string) bool {
	return path == "/login" || path == "/app.css" || path == "/favicon.svg"
}

// authorized reports whether r carries the token (cookie or bearer).
func (s *Server) authorized(r *http.Request) bool {
	if c, err := r.Cookie(CookieName); err == nil && s.tokenOK(c.Value) {
		return true
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(strings.TrimSpace(a)) {
		return true
	}
	return false
}

func (s *Server) tokenOK(t string) bool {
	return s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.cfg.Token)) == 1
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// login is POST /login: the token from the login form, kept in the cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || !s.tokenOK(r.PostForm.Get("token")) {
		w.WriteHeader(http.StatusUnauthorized)
		s.loginPage(w, r, "That token is not the console's token.")
		return
	}
	s.setCookie(w, r, r.PostForm.Get("token"))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// loginPage answers a request without the token with a form asking for it.
func (s *Server) loginPage(w http.ResponseWriter, _ *http.Request, problem string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if problem != "" {
		problem = `<p class="error" role="alert">` + htmlEscape(problem) + `</p>`
	}
	_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>skillbus console: log in</title><link rel="stylesheet" href="/app.css"></head>
<body><main class="login"><h1>skillbus console</h1>` + problem + `
<p>This console needs its token: the one <code>skillbus ui</code> was started with, from the <code>SKILLBUS_TOKEN</code> environment variable or the file its <code>--token-file</code> flag names.</p>
<form method="post" action="/login"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button></form></main></body></html>`))
}

var htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func htmlEscape(s string) string { return htmlReplacer.Replace(s) }

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return IsLoopback(host)
}

func quoteHost(h string) string {
	if len(h) > 80 {
		h = h[:80] + "…"
	}
	return `"` + h + `"`
}

// sameOrigin reports whether a state-changing request comes from the
// console's own pages: the Origin header (sent by browsers on POST), when
// present, must name the host the request was sent to; Sec-Fetch-Site,
// when present, must be same-origin (or none: typed by the user).
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser's cross-site request (curl, tests): the other checks apply
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}
