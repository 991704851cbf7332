// Package console is Ferry's web console for operators: pages for the cluster (brokers,
// roles, versions, rates, disk), topics (queues, offsets, routes; create), consumer groups
// (members, lag per queue; reset offsets to a time), message search (by id, key or time
// range, with body preview and trace), a group's dead letters (resend to a live consumer)
// and every broker's effective configuration.
//
// A Console is an http.Handler served under a path prefix (/console), by a broker's or
// standalone's HTTP listener (package observe) or by `ferryctl console` against any
// cluster: it talks to the cluster only through a client.Admin, the calls ferryctl uses.
// Pages are html/template files embedded in the binary, rendered on the server, with one
// embedded style sheet and no script.
//
// Login is required. Accounts are Options.Users: console.users entries (a bcrypt hash of
// the password, role readwrite or readonly) and, when enabled, the accounts of an ACL
// file (admin accounts read-write, others read-only; the secret key is the password).
// There is no default account: New refuses to build a console without one
// (ErrNoAccount). A login makes a session: a random id in an HttpOnly, SameSite=Strict
// cookie (Secure over TLS) that expires after Options.SessionTTL, ended by logout. Every
// write is a POST carrying the session's CSRF token (compared in constant time) from a
// read-write account; other writes are refused with 403. Failed logins are limited per
// client address (Options.LoginFailures per Options.LoginWindow, in a bounded table).
package console

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
)

//go:embed templates/*.html static/*
var files embed.FS

// ErrInvalidOptions is wrapped by the errors of Options.Validate.
var ErrInvalidOptions = errors.New("console: invalid options")

// ErrNoAccount is wrapped by the error of New when no account is configured: the console
// has no default password.
var ErrNoAccount = errors.New("console: no account configured")

// NoAccountHelp says how to add an account; the ErrNoAccount error carries it.
const NoAccountHelp = "add one to console.users as NAME:ROLE:BCRYPT-HASH (ROLE readwrite or readonly; " +
	"`ferryctl console hash-password` prints the hash of a password read from stdin), " +
	"or set console.aclAccounts: true to let the accounts of broker.aclFile log in"

// Options configure a Console.
type Options struct {
	// Admin is how the console reaches the cluster. Required.
	Admin *client.Admin
	// Users are the accounts that may log in; at least one (else ErrNoAccount).
	Users []User
	// Prefix is the path the console is served under, without a trailing slash.
	// Default "/console".
	Prefix string
	// SessionTTL is how long a session lasts after login. Default 8h.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions held; past it the oldest goes. Default 1024.
	MaxSessions int
	// LoginFailures failed logins from one address within LoginWindow block further tries
	// from it until the window ends (429). Defaults 5 and 1m.
	LoginFailures int
	// LoginWindow is the period LoginFailures counts over.
	LoginWindow time.Duration
	// LoginAddrs bounds the addresses the login limiter tracks. Default 4096.
	LoginAddrs int
	// RequestTimeout bounds the cluster calls of one page. Default 15s.
	RequestTimeout time.Duration
	// TraceTopic is where clients' message-trace records are looked up. Default
	// "RMQ_SYS_TRACE_TOPIC".
	TraceTopic string
	// Logger receives logins, logouts, writes and refusals.
	Logger zerolog.Logger
	// Now is the clock (sessions, login windows, rates). Default time.Now.
	Now func() time.Time
}

// DefaultOptions returns Options with the defaults; Admin and Users must still be set.
func DefaultOptions() Options {
	return Options{Prefix: "/console", SessionTTL: 8 * time.Hour, MaxSessions: 1024, LoginFailures: 5,
		LoginWindow: time.Minute, LoginAddrs: 4096, RequestTimeout: 15 * time.Second,
		TraceTopic: "RMQ_SYS_TRACE_TOPIC", Logger: zerolog.Nop(), Now: time.Now}
}

// Validate reports the first invalid option, wrapping ErrInvalidOptions, or ErrNoAccount
// when Users is empty.
func (o Options) Validate() error {
	switch {
	case o.Admin == nil:
		return fmt.Errorf("%w: Admin is required", ErrInvalidOptions)
	case len(o.Users) == 0:
		return fmt.Errorf("%w: %s", ErrNoAccount, NoAccountHelp)
	case !strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/") || strings.ContainsAny(o.Prefix, " {}"):
		return fmt.Errorf("%w: Prefix %q: want a path like /console", ErrInvalidOptions, o.Prefix)
	case o.SessionTTL <= 0, o.LoginWindow <= 0, o.RequestTimeout <= 0:
		return fmt.Errorf("%w: SessionTTL, LoginWindow and RequestTimeout must be positive", ErrInvalidOptions)
	case o.MaxSessions < 1, o.LoginFailures < 1, o.LoginAddrs < 1:
		return fmt.Errorf("%w: MaxSessions, LoginFailures and LoginAddrs must be at least 1", ErrInvalidOptions)
	case o.TraceTopic == "" || o.Now == nil:
		return fmt.Errorf("%w: TraceTopic and Now are required", ErrInvalidOptions)
	}
	seen := map[string]bool{}
	for _, u := range o.Users {
		if err := u.check(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		if seen[u.Name] {
			return fmt.Errorf("%w: user %s is listed twice", ErrInvalidOptions, u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

// Console serves the console's pages. It starts no goroutine.
type Console struct {
	opts     Options
	users    map[string]User
	sessions *sessions
	limiter  *limiter
	rates    *rates
	pages    map[string]*template.Template
	mux      *http.ServeMux
	log      zerolog.Logger
}

// The cookies: the session's id, and the login form's double-submit token.
const (
	sessionCookie = "ferry_console"
	loginCookie   = "ferry_console_login"
)

// maxForm bounds a request body.
const maxForm = 64 << 10

// New builds a console from o.
func New(o Options) (*Console, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &Console{opts: o, users: map[string]User{}, mux: http.NewServeMux(),
		sessions: newSessions(o.MaxSessions, o.SessionTTL, o.Now),
		limiter:  newLimiter(o.LoginFailures, o.LoginAddrs, o.LoginWindow, o.Now),
		rates:    newRates(maxRateTopics, o.Now),
		log:      o.Logger}
	for _, u := range o.Users {
		c.users[u.Name] = u
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	c.routes()
	return c, nil
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcMap()).ParseFS(files, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(files, n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// funcMap holds the templates' helper functions.
func funcMap() template.FuncMap {
	return template.FuncMap{
		// perm names topic permission bits: R, W, RW (and X for inherit).
		"perm": func(p int32) string {
			s := ""
			if p&protocol.PermRead != 0 {
				s += "R"
			}
			if p&protocol.PermWrite != 0 {
				s += "W"
			}
			if p&protocol.PermInherit != 0 {
				s += "X"
			}
			return cmp.Or(s, "-")
		},
	}
}

// routes registers every page under the prefix.
func (c *Console) routes() {
	p := c.opts.Prefix
	static, _ := fs.Sub(files, "static") // the directory is embedded: Sub cannot fail
	c.mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET "+p+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"/cluster", http.StatusSeeOther)
	})
	c.mux.HandleFunc("GET "+p+"/login", c.loginPage)
	c.mux.HandleFunc("POST "+p+"/login", c.login)
	c.mux.Handle("POST "+p+"/logout", c.write(false, c.logout))
	c.mux.Handle("GET "+p+"/cluster", c.read(c.clusterPage))
	c.mux.Handle("GET "+p+"/topics", c.read(c.topicsPage))
	c.mux.Handle("POST "+p+"/topics", c.write(true, c.createTopic))
	c.mux.Handle("GET "+p+"/topic", c.read(c.topicPage))
	c.mux.Handle("GET "+p+"/groups", c.read(c.groupsPage))
	c.mux.Handle("GET "+p+"/group", c.read(c.groupPage))
	c.mux.Handle("POST "+p+"/group/reset", c.write(true, c.resetOffsets))
	c.mux.Handle("GET "+p+"/messages", c.read(c.messagesPage))
	c.mux.Handle("GET "+p+"/message", c.read(c.messagePage))
	c.mux.Handle("GET "+p+"/dlq", c.read(c.dlqPage))
	c.mux.Handle("POST "+p+"/dlq/resend", c.write(true, c.resend))
	c.mux.Handle("GET "+p+"/config", c.read(c.configPage))
}

// ServeHTTP serves the console's pages with security headers on every answer.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

// Sessions counts the sessions held (expired ones not yet removed included).
func (c *Console) Sessions() int { return c.sessions.len() }

// request is what a page handler gets: the request, its session and a context bounded
// by Options.RequestTimeout.
type request struct {
	*http.Request
	ctx     context.Context
	session *session
}

// pageFunc renders a page, or handles a write.
type pageFunc func(w http.ResponseWriter, r *request)

// sessionOf returns r's live session and its id.
func (c *Console) sessionOf(r *http.Request) (*session, string, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, "", false
	}
	s, ok := c.sessions.get(ck.Value)
	return s, ck.Value, ok
}

// read serves a page to a logged-in user; others are sent to the login page.
func (c *Console) read(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _, ok := c.sessionOf(r)
		if !ok {
			http.Redirect(w, r, c.opts.Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
		defer cancel()
		fn(w, &request{Request: r, ctx: ctx, session: s})
	})
}

// write serves a POST from a logged-in user that carries the session's CSRF token and,
// when needsRW, comes from a read-write account; else 401 or 403.
func (c *Console) write(needsRW bool, fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if !sameOrigin(r) {
			c.refuse(w, r, http.StatusForbidden, "cross-origin request refused")
			return
		}
		s, _, ok := c.sessionOf(r)
		if !ok {
			c.refuse(w, r, http.StatusUnauthorized, "not logged in (or the session expired): log in again")
			return
		}
		if err := r.ParseForm(); err != nil {
			c.refuse(w, r, http.StatusBadRequest, "bad form: "+err.Error())
			return
		}
		if !tokenEqual(r.PostForm.Get("csrf"), s.csrf) {
			c.log.Warn().Str("user", s.user).Str("path", r.URL.Path).Msg("console: write without a valid CSRF token refused")
			c.refuse(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
			return
		}
		if needsRW && s.role != RoleReadWrite {
			c.log.Warn().Str("user", s.user).Str("path", r.URL.Path).Msg("console: write by a read-only account refused")
			c.refuse(w, r, http.StatusForbidden, "account "+s.user+" is read-only")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
		defer cancel()
		fn(w, &request{Request: r, ctx: ctx, session: s})
	})
}

// sameOrigin reports whether a request's Origin header, when it has one, names the host
// it was sent to (browsers send it on every POST).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// refuse answers code with a plain page saying why (with the navigation when the request
// has a session).
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	s, _, _ := c.sessionOf(r)
	c.renderCode(w, code, "refused", s, view{Title: http.StatusText(code), Error: why})
}

// view is what every page template gets.
type view struct {
	Title  string
	Prefix string
	User   string
	Role   Role
	CSRF   string
	Flash  string
	Error  string
	Data   any
}

// CanWrite says whether the page shows write forms.
func (v view) CanWrite() bool { return v.Role == RoleReadWrite }

// render answers 200 with page (renderCode).
func (c *Console) render(w http.ResponseWriter, _ *http.Request, page string, s *session, v view) {
	c.renderCode(w, http.StatusOK, page, s, v)
}

// renderCode answers code with page executed with v, filled with the session's user,
// token and message.
func (c *Console) renderCode(w http.ResponseWriter, code int, page string, s *session, v view) {
	t, ok := c.pages[page]
	if !ok {
		http.Error(w, "console: no page "+page, http.StatusInternalServerError)
		return
	}
	v.Prefix = c.opts.Prefix
	if s != nil {
		v.User, v.Role, v.CSRF = s.user, s.role, s.csrf
		if v.Flash == "" {
			v.Flash = c.takeFlash(s)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := t.ExecuteTemplate(w, "layout.html", v); err != nil {
		c.log.Error().Err(err).Str("page", page).Msg("console: render")
	}
}

// setFlash keeps a message for the session's next page.
func (c *Console) setFlash(s *session, msg string) {
	c.sessions.mu.Lock()
	defer c.sessions.mu.Unlock()
	s.flash = msg
}

// takeFlash returns and clears the session's message.
func (c *Console) takeFlash(s *session) string {
	c.sessions.mu.Lock()
	defer c.sessions.mu.Unlock()
	f := s.flash
	s.flash = ""
	return f
}

// clientAddr is the address the login limiter counts r under: the peer's IP.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// cookie builds one of the console's cookies: HttpOnly, SameSite=Strict, Secure over TLS,
// scoped to the prefix.
func (c *Console) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: c.opts.Prefix + "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// loginPage shows the login form with a fresh double-submit token.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := c.sessionOf(r); ok {
		http.Redirect(w, r, c.next(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.showLogin(w, r, http.StatusOK, "")
}

// showLogin renders the login form with code and an error.
func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, code int, msg string) {
	tok := randomToken()
	http.SetCookie(w, c.cookie(r, loginCookie, tok, 3600))
	c.renderCode(w, code, "login", nil, view{Title: "Log in", Error: msg,
		Data: map[string]string{"Token": tok, "Next": r.FormValue("next")}})
}

// next is where a login goes on to: a console path, else the cluster page.
func (c *Console) next(n string) string {
	if strings.HasPrefix(n, c.opts.Prefix+"/") && !strings.HasPrefix(n, "//") && !strings.Contains(n, "\\") {
		return n
	}
	return c.opts.Prefix + "/cluster"
}

// login checks a login form: its double-submit token, the address's failure count, the
// name and password.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	addr := clientAddr(r)
	if err := r.ParseForm(); err != nil {
		c.showLogin(w, r, http.StatusBadRequest, "bad form")
		return
	}
	ck, err := r.Cookie(loginCookie)
	if !sameOrigin(r) || err != nil || !tokenEqual(r.PostForm.Get("token"), ck.Value) {
		c.showLogin(w, r, http.StatusForbidden, "the login form expired: try again")
		return
	}
	if left, blocked := c.limiter.blocked(addr); blocked {
		c.log.Warn().Str("from", addr).Msg("console: login refused: too many failures")
		w.Header().Set("Retry-After", fmt.Sprint(int(left.Seconds())+1))
		c.showLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many failed logins: try again in %d s", int(left.Seconds())+1))
		return
	}
	name := r.PostForm.Get("user")
	u, ok := c.users[name]
	if !u.verify(r.PostForm.Get("password"), ok) {
		c.limiter.fail(addr)
		c.log.Warn().Str("user", name).Str("from", addr).Msg("console: login failed")
		c.showLogin(w, r, http.StatusUnauthorized, "wrong name or password")
		return
	}
	c.limiter.succeed(addr)
	id, _ := c.sessions.create(u.Name, u.Role)
	http.SetCookie(w, c.cookie(r, sessionCookie, id, int(c.opts.SessionTTL.Seconds())))
	http.SetCookie(w, c.cookie(r, loginCookie, "", -1))
	c.log.Info().Str("user", u.Name).Str("role", string(u.Role)).Str("from", addr).Msg("console: login")
	http.Redirect(w, r, c.next(r.PostForm.Get("next")), http.StatusSeeOther)
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *request) {
	if _, id, ok := c.sessionOf(r.Request); ok {
		c.sessions.remove(id)
	}
	http.SetCookie(w, c.cookie(r.Request, sessionCookie, "", -1))
	c.log.Info().Str("user", r.session.user).Msg("console: logout")
	http.Redirect(w, r.Request, c.opts.Prefix+"/login", http.StatusSeeOther)
}
