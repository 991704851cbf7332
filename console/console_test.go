package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// The test accounts: one read-write, one read-only.
const (
	adminName   = "alice"
	adminPass   = "alice-password"
	readerName  = "bob"
	readerPass  = "bob-password"
	wait        = 20 * time.Second
	consolePath = "/console"
	wrongPass   = "not-the-password"
)

// testUser makes a console.users entry with a cheap bcrypt hash.
func testUser(t *testing.T, name, pass string, role Role) User {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	require.NoError(t, err)
	u, err := ParseUser(name + ":" + string(role) + ":" + string(h))
	require.NoError(t, err)
	return u
}

// env is a name server and a broker on 127.0.0.1, a client of them and a console
// served over HTTP on 127.0.0.1.
type env struct {
	cluster *testutil.Cluster
	client  *client.Client
	admin   *client.Admin
	console *Console
	url     string
}

// startEnv starts the cluster and a console with the test accounts; edit changes its
// options.
func startEnv(t *testing.T, edit func(*Options)) *env {
	t.Helper()
	e := &env{cluster: testutil.StartCluster(t)}
	var err error
	e.client, err = client.New(client.WithNameServers(e.cluster.NamesrvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.client.Close()) })
	e.admin = e.client.Admin()
	o := DefaultOptions()
	o.Admin = e.admin
	o.Users = []User{testUser(t, adminName, adminPass, RoleReadWrite), testUser(t, readerName, readerPass, RoleReadOnly)}
	if edit != nil {
		edit(&o)
	}
	e.console, err = New(o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(consolePath+"/", e.console)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// browser is an HTTP client with cookies that does not follow redirects by itself.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func (e *env) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: e.url, c: &http.Client{Jar: jar, Timeout: wait,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends one request and returns the status, the Location header and the body.
func (b *browser) do(method, path string, form url.Values) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer func() { require.NoError(b.t, resp.Body.Close()) }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, resp.Header.Get("Location"), string(data)
}

// get follows redirects from path and returns the final status, path and body.
func (b *browser) get(path string) (int, string, string) {
	b.t.Helper()
	for range 5 {
		code, loc, body := b.do(http.MethodGet, path, nil)
		if code != http.StatusSeeOther && code != http.StatusFound {
			return code, path, body
		}
		path = loc
	}
	b.t.Fatalf("too many redirects from %s", path)
	return 0, "", ""
}

// post sends a form and follows the redirect that answers it, returning the first
// status and the final body.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	code, loc, body := b.do(http.MethodPost, path, form)
	if code == http.StatusSeeOther {
		_, _, body = b.get(loc)
	}
	return code, body
}

var (
	loginTokenRe = regexp.MustCompile(`name="token" value="([^"]+)"`)
	csrfRe       = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)
)

// login logs in and returns the status of the login POST.
func (b *browser) login(name, pass string) int {
	b.t.Helper()
	code, _, body := b.do(http.MethodGet, consolePath+"/login", nil)
	require.Equal(b.t, http.StatusOK, code)
	m := loginTokenRe.FindStringSubmatch(body)
	require.NotNil(b.t, m, body)
	code, _, _ = b.do(http.MethodPost, consolePath+"/login", url.Values{"user": {name}, "password": {pass}, "token": {m[1]}})
	return code
}

// csrf reads the session's CSRF token from a page.
func (b *browser) csrf() string {
	b.t.Helper()
	_, _, body := b.get(consolePath + "/cluster")
	m := csrfRe.FindStringSubmatch(body)
	require.NotNil(b.t, m, body)
	return m[1]
}

func TestNoAccountRefusesToStart(t *testing.T) {
	c, err := client.New(client.WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	o := DefaultOptions()
	o.Admin = c.Admin()
	_, err = New(o)
	require.ErrorIs(t, err, ErrNoAccount)
	require.Contains(t, err.Error(), "console.users")
	require.Contains(t, err.Error(), "hash-password")
}

func TestLogin(t *testing.T) {
	e := startEnv(t, nil)
	b := e.browser(t)

	// Every page needs a login.
	code, path, _ := b.get(consolePath + "/topics")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.HasPrefix(path, consolePath+"/login?next="), path)

	require.Equal(t, http.StatusUnauthorized, b.login(adminName, wrongPass))
	require.Equal(t, http.StatusUnauthorized, b.login("nobody", adminPass))
	_, path, _ = b.get(consolePath + "/cluster")
	require.True(t, strings.HasPrefix(path, consolePath+"/login"), "a wrong password makes no session")
	require.Zero(t, e.console.Sessions())

	require.Equal(t, http.StatusSeeOther, b.login(adminName, adminPass))
	code, path, body := b.get(consolePath + "/cluster")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, consolePath+"/cluster", path)
	require.Contains(t, body, e.cluster.BrokerAddr, "the cluster page lists the broker")
	require.Contains(t, body, "Ferry devel", "with its version")
	require.Contains(t, body, "alice (readwrite)")

	// The other pages render for the logged-in user.
	for _, p := range []string{"/topics?system=1", "/groups", "/messages", "/config", "/dlq?g=nobody", "/topic?t=TBW102"} {
		code, path, body := b.get(consolePath + p)
		require.Equal(t, http.StatusOK, code, p)
		require.Equal(t, consolePath+p, path)
		require.NotContains(t, body, `class="error"`, p)
	}
	_, _, body = b.get(consolePath + "/config?q=brokerName")
	require.Contains(t, body, "brokerName")

	// Logout ends the session.
	code, _ = b.post(consolePath+"/logout", url.Values{"csrf": {b.csrf()}})
	require.Equal(t, http.StatusSeeOther, code)
	_, path, _ = b.get(consolePath + "/cluster")
	require.True(t, strings.HasPrefix(path, consolePath+"/login"), path)
}

func TestSecurityHeaders(t *testing.T) {
	e := startEnv(t, nil)
	resp, err := http.Get(e.url + consolePath + "/login")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h := resp.Header
	require.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, "DENY", h.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", h.Get("Cache-Control"))

	resp, err = http.Get(e.url + consolePath + "/static/style.css")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "the style sheet needs no login")
	require.Contains(t, resp.Header.Get("Content-Type"), "text/css")
}

func TestSessionCookie(t *testing.T) {
	e := startEnv(t, nil)
	b := e.browser(t)
	code, _, body := b.do(http.MethodGet, consolePath+"/login", nil)
	require.Equal(t, http.StatusOK, code)
	token := loginTokenRe.FindStringSubmatch(body)[1]
	req, err := http.NewRequest(http.MethodPost, e.url+consolePath+"/login",
		strings.NewReader(url.Values{"user": {adminName}, "password": {adminPass}, "token": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range b.c.Jar.Cookies(req.URL) {
		req.AddCookie(ck)
	}
	resp, err := b.c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var ses *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			ses = ck
		}
	}
	require.NotNil(t, ses)
	require.True(t, ses.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ses.SameSite)
	require.Equal(t, consolePath+"/", ses.Path)
	require.Equal(t, int((8 * time.Hour).Seconds()), ses.MaxAge)
	require.GreaterOrEqual(t, len(ses.Value), 43, "32 random bytes")
}

func TestSecureCookieOverTLS(t *testing.T) {
	e := startEnv(t, nil)
	mux := http.NewServeMux()
	mux.Handle(consolePath+"/", e.console)
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	c := srv.Client()
	resp, err := c.Get(srv.URL + consolePath + "/login")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	var token *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == loginCookie {
			token = ck
		}
	}
	require.NotNil(t, token)
	require.True(t, token.Secure)
	req, err := http.NewRequest(http.MethodPost, srv.URL+consolePath+"/login", strings.NewReader(url.Values{
		"user": {adminName}, "password": {adminPass}, "token": {loginTokenRe.FindStringSubmatch(string(body))[1]}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(token)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	secure := false
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie {
			secure = ck.Secure
		}
	}
	require.True(t, secure, "the session cookie is Secure over TLS")
}

func TestSessionExpires(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := startEnv(t, func(o *Options) { o.Now, o.SessionTTL = clock, time.Hour })
	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(readerName, readerPass))
	_, path, _ := b.get(consolePath + "/config")
	require.Equal(t, consolePath+"/config", path)
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	_, path, _ = b.get(consolePath + "/config")
	require.True(t, strings.HasPrefix(path, consolePath+"/login"), path)
}

func TestLoginRateLimited(t *testing.T) {
	e := startEnv(t, func(o *Options) { o.LoginFailures = 3 })
	b := e.browser(t)
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, b.login(adminName, wrongPass))
	}
	require.Equal(t, http.StatusTooManyRequests, b.login(adminName, adminPass), "blocked even with the right password")
	require.Zero(t, e.console.Sessions())
}

func TestCreateTopicShowsInList(t *testing.T) {
	e := startEnv(t, nil)
	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(adminName, adminPass))
	_, _, body := b.get(consolePath + "/topics")
	require.Contains(t, body, `id="create-topic"`, "a read-write account sees the create form")
	code, body := b.post(consolePath+"/topics", url.Values{"csrf": {b.csrf()}, "topic": {"ConsoleOrders"}, "queues": {"3"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, body, "topic ConsoleOrders created")

	r, err := e.admin.TopicRoute(context.Background(), "ConsoleOrders")
	require.NoError(t, err)
	require.Equal(t, int32(3), r.Queues[0].WriteQueues)
	_, _, body = b.get(consolePath + "/topics")
	require.Contains(t, body, `>ConsoleOrders</a>`)
	_, _, body = b.get(consolePath + "/topic?t=ConsoleOrders")
	require.Contains(t, body, `<td>RW</td>`)
	require.Equal(t, 3, strings.Count(table(body, "queues"), "<tr><td>broker-a</td>"), "three queue rows")
}

func TestWriteWithoutCSRFTokenRefused(t *testing.T) {
	e := startEnv(t, nil)
	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(adminName, adminPass))
	code, _ := b.post(consolePath+"/topics", url.Values{"topic": {"NoToken"}})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = b.post(consolePath+"/topics", url.Values{"topic": {"NoToken"}, "csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, code)

	// A cross-origin form with the right token is refused too.
	req, err := http.NewRequest(http.MethodPost, e.url+consolePath+"/topics",
		strings.NewReader(url.Values{"topic": {"NoToken"}, "csrf": {b.csrf()}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := b.c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// Without a session: 401.
	code, _ = e.browser(t).post(consolePath+"/topics", url.Values{"topic": {"NoToken"}, "csrf": {"x"}})
	require.Equal(t, http.StatusUnauthorized, code)

	_, err = e.admin.TopicRoute(context.Background(), "NoToken")
	require.ErrorIs(t, err, client.ErrNoRoute)
}

func TestReadOnlyCannotWrite(t *testing.T) {
	e := startEnv(t, nil)
	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(readerName, readerPass))
	_, _, body := b.get(consolePath + "/topics")
	require.NotContains(t, body, `id="create-topic"`)
	csrf := b.csrf()
	code, body := b.post(consolePath+"/topics", url.Values{"csrf": {csrf}, "topic": {"ReaderTopic"}})
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "read-only")
	code, _ = b.post(consolePath+"/group/reset", url.Values{"csrf": {csrf}, "g": {"g"}, "topic": {"t"}, "time": {"2026-01-01T00:00:00Z"}})
	require.Equal(t, http.StatusForbidden, code)
	code, _ = b.post(consolePath+"/dlq/resend", url.Values{"csrf": {csrf}, "g": {"g"}, "id": {"x"}})
	require.Equal(t, http.StatusForbidden, code)
	_, err := e.admin.TopicRoute(context.Background(), "ReaderTopic")
	require.ErrorIs(t, err, client.ErrNoRoute)
	// Logging out is no write: a read-only account may.
	code, _ = b.post(consolePath+"/logout", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, code)
}

func TestSearchMessages(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	require.NoError(t, e.admin.CreateTopic(ctx, client.TopicConfig{Name: "SearchMe", ReadQueues: 2, WriteQueues: 2}, client.Target{}))
	p, err := e.client.NewProducer("console-test")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	m := message.NewMessage("SearchMe", []byte("order 42 <b>paid</b>"))
	m.SetKeys("order-42")
	m.SetTags("paid")
	sent, err := p.Send(ctx, m)
	require.NoError(t, err)
	_, err = p.Send(ctx, message.NewMessage("SearchMe", []byte{0, 1, 2, 0xff}))
	require.NoError(t, err)

	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(readerName, readerPass))
	var body string
	testkit.Eventually(t, wait, func() bool {
		_, _, body = b.get(consolePath + "/messages?by=key&topic=SearchMe&key=order-42")
		return strings.Contains(body, sent.MsgID)
	}, "the key search finds the message")
	require.Contains(t, body, "order 42 &lt;b&gt;paid&lt;/b&gt;", "the body preview, escaped")
	require.Contains(t, body, "Found 1")

	_, _, body = b.get(consolePath + "/messages?by=id&topic=SearchMe&id=" + sent.MsgID)
	require.Contains(t, body, sent.OffsetMsgID)
	testkit.Eventually(t, wait, func() bool {
		_, _, body = b.get(consolePath + "/messages?by=time&topic=SearchMe")
		return strings.Contains(body, "Found 2")
	}, "the time search finds both messages once both are queued")
	require.Contains(t, body, "hex: 00 01 02 ff", "a binary body is shown in hex")

	_, _, body = b.get(consolePath + "/message?topic=SearchMe&id=" + sent.OffsetMsgID)
	require.Contains(t, body, "order-42")
	require.Contains(t, body, "UNIQ_KEY")
	require.Contains(t, body, "no trace records")

	// A client's trace record (RocketMQ's layout: fields split by \x01, records by \x02),
	// keyed by the message id in the trace topic, shows on the message page.
	tr := message.NewMessage(protocol.TraceTopic, []byte("Pub\x01"+strconv.FormatInt(time.Now().UnixMilli(), 10)+
		"\x01DefaultRegion\x01console-test\x01SearchMe\x01"+sent.MsgID+"\x01paid\x01order-42\x01"+e.cluster.BrokerAddr+
		"\x0120\x013\x010\x01"+sent.OffsetMsgID+"\x01true\x02"))
	tr.SetKeys(sent.MsgID + " order-42")
	_, err = p.Send(ctx, tr)
	require.NoError(t, err)
	testkit.Eventually(t, wait, func() bool {
		_, _, body = b.get(consolePath + "/message?topic=SearchMe&id=" + sent.OffsetMsgID)
		return strings.Contains(table(body, "trace"), "<td>Pub</td>")
	}, "the trace record is found")
	require.Contains(t, table(body, "trace"), "<td>console-test</td>", "the producer group")

	_, _, body = b.get(consolePath + "/messages?by=key&topic=SearchMe&key=no-such-key")
	require.Contains(t, body, `class="error"`)
}

func TestDeadLetterResend(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	const topic, group = "Payments", "billing"
	require.NoError(t, e.admin.CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1}, client.Target{}))

	var mu sync.Mutex
	var resent []*client.MessageExt
	cc, err := client.New(client.WithNameServers(e.cluster.NamesrvAddr), client.WithInstanceName("dlq-consumer"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	pc, err := cc.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		if msgs[0].Topic == protocol.DLQTopic(group) {
			mu.Lock()
			resent = append(resent, msgs...)
			mu.Unlock()
			return client.ConsumeSuccess
		}
		return client.ConsumeRetryLater // every first delivery fails, to the DLQ at once
	}, client.WithMaxReconsumeTimes(0), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()

	p, err := e.client.NewProducer("console-dlq")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	m := message.NewMessage(topic, []byte("charge 10 EUR"))
	m.SetKeys("invoice-7")
	sent, err := p.Send(ctx, m)
	require.NoError(t, err)

	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(adminName, adminPass))
	var body string
	testkit.Eventually(t, wait, func() bool {
		_, _, body = b.get(consolePath + "/dlq?g=" + group)
		return strings.Contains(body, sent.MsgID) && strings.Contains(body, "<select name=\"client\">")
	}, "the dead letter and an online consumer are listed")
	require.Contains(t, body, "charge 10 EUR")
	offsetID := regexp.MustCompile(`name="id" value="([0-9A-F]+)"`).FindStringSubmatch(body)
	require.NotNil(t, offsetID, body)

	code, body := b.post(consolePath+"/dlq/resend", url.Values{"csrf": {b.csrf()}, "g": {group}, "id": {offsetID[1]}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, body, "CR_SUCCESS", body)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, resent, 1, "the consumer got the dead letter")
	require.Equal(t, "charge 10 EUR", string(resent[0].Body))
	require.Equal(t, sent.MsgID, resent[0].MsgID)
}

func TestGroupPageAndReset(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	const topic, group = "Resettable", "resetters"
	require.NoError(t, e.admin.CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1}, client.Target{}))
	p, err := e.client.NewProducer("console-reset")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	for range 3 {
		_, err := p.Send(ctx, message.NewMessage(topic, []byte("x")))
		require.NoError(t, err)
	}
	mq := client.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
	testkit.Eventually(t, wait, func() bool {
		st, err := e.admin.TopicStats(ctx, topic)
		return err == nil && st.Messages() == 3
	}, "the three messages are queued")
	require.NoError(t, e.admin.UpdateConsumerOffset(ctx, group, mq, 3))

	b := e.browser(t)
	require.Equal(t, http.StatusSeeOther, b.login(adminName, adminPass))
	_, _, body := b.get(consolePath + "/group?g=" + group)
	require.Contains(t, body, "No member is online.")
	require.Contains(t, body, `<td>Resettable</td><td>broker-a</td><td class="num">0</td><td class="num">3</td><td class="num">3</td><td class="num">0</td>`)

	code, body := b.post(consolePath+"/group/reset", url.Values{"csrf": {b.csrf()}, "g": {group}, "topic": {topic}, "time": {"2000-01-01T00:00"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, body, "reset to 2000-01-01T00:00:00Z")
	progress, err := e.admin.ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Equal(t, int64(0), progress[0].ConsumerOffset)
	require.Contains(t, body, `<td class="num">3</td><td class="num">0</td><td class="num">3</td>`, "lag 3 after the reset")

	code, body = b.post(consolePath+"/group/reset", url.Values{"csrf": {b.csrf()}, "g": {group}, "topic": {topic}, "time": {"yesterday"}})
	require.Equal(t, http.StatusSeeOther, code)
	require.Contains(t, body, "error: reset offsets")
}

func TestOptionsValidate(t *testing.T) {
	c, err := client.New(client.WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	good := DefaultOptions()
	good.Admin = c.Admin()
	good.Users = []User{testUser(t, "a", "password1", RoleReadOnly)}
	require.NoError(t, good.Validate())
	for name, edit := range map[string]func(*Options){
		"no admin":       func(o *Options) { o.Admin = nil },
		"prefix":         func(o *Options) { o.Prefix = "/console/" },
		"ttl":            func(o *Options) { o.SessionTTL = 0 },
		"sessions":       func(o *Options) { o.MaxSessions = 0 },
		"duplicate user": func(o *Options) { o.Users = append(o.Users, o.Users[0]) },
		"bad role":       func(o *Options) { o.Users = []User{{Name: "x", Role: "root", Secret: "s"}} },
	} {
		o := good
		edit(&o)
		require.ErrorIs(t, o.Validate(), ErrInvalidOptions, name)
	}
}

func TestParseUser(t *testing.T) {
	h, err := HashPassword("correct horse")
	require.NoError(t, err)
	u, err := ParseUser("carol:readonly:" + h)
	require.NoError(t, err)
	require.Equal(t, "carol", u.Name)
	require.Equal(t, RoleReadOnly, u.Role)
	require.True(t, u.verify("correct horse", true))
	require.False(t, u.verify("wrong horse", true))
	require.False(t, u.verify("correct horse", false), "no account: never")

	_, err = HashPassword("short")
	require.ErrorIs(t, err, ErrInvalidUser)
	for _, bad := range []string{"", "carol", "carol:readonly", ":readonly:" + h, "carol:admin:" + h, "carol:readonly:plaintext"} {
		_, err := ParseUser(bad)
		require.ErrorIs(t, err, ErrInvalidUser, bad)
		if strings.Contains(bad, "plaintext") {
			require.NotContains(t, err.Error(), "plaintext", "the secret is not quoted")
		}
	}
}

func TestUsersFromACL(t *testing.T) {
	users := UsersFromACL(aclConfig())
	require.Len(t, users, 2)
	require.Equal(t, RoleReadWrite, users[0].Role)
	require.Equal(t, RoleReadOnly, users[1].Role)
	require.True(t, users[1].verify("app-secret-1", true))
	require.False(t, users[1].verify("app-secret-2", true))
}

func TestSessionsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newSessions(3, time.Minute, func() time.Time { return now })
	var ids []string
	for i := range 5 {
		id, _ := s.create("u", RoleReadOnly)
		ids = append(ids, id)
		now = now.Add(time.Duration(i+1) * time.Second)
	}
	require.Equal(t, 3, s.len())
	_, ok := s.get(ids[0])
	require.False(t, ok, "the oldest went first")
	_, ok = s.get(ids[4])
	require.True(t, ok)
	now = now.Add(time.Minute)
	_, ok = s.get(ids[4])
	require.False(t, ok, "expired")
	_, ok = s.get("")
	require.False(t, ok)
}

func TestLimiterBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimiter(2, 2, time.Minute, func() time.Time { return now })
	l.fail("a")
	l.fail("a")
	_, blocked := l.blocked("a")
	require.True(t, blocked)
	now = now.Add(time.Second)
	l.fail("b")
	now = now.Add(time.Second)
	l.fail("c") // the table is full: a, the oldest, goes
	require.Equal(t, 2, l.tracked())
	_, blocked = l.blocked("a")
	require.False(t, blocked)
	l.fail("c")
	left, blocked := l.blocked("c")
	require.True(t, blocked)
	require.Equal(t, time.Minute, left)
	_, blocked = l.blocked("b")
	require.False(t, blocked, "one failure")
	now = now.Add(time.Minute)
	_, blocked = l.blocked("c")
	require.False(t, blocked, "the window ended")
	l.fail("b")
	l.succeed("b")
	_, blocked = l.blocked("b")
	require.False(t, blocked)
}

func TestRates(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRates(2, func() time.Time { return now })
	_, ok := r.observe("t", 100)
	require.False(t, ok, "one sample gives no rate")
	now = now.Add(2 * time.Second)
	tps, ok := r.observe("t", 120)
	require.True(t, ok)
	require.InDelta(t, 10.0, tps, 1e-9)
	now = now.Add(100 * time.Millisecond)
	tps, ok = r.observe("t", 500)
	require.True(t, ok)
	require.InDelta(t, 10.0, tps, 1e-9, "a view within a second repeats the last rate")
	r.observe("u", 1)
	r.observe("v", 1) // past the bound: the table starts over
	require.LessOrEqual(t, len(r.samples), 2)
}

func TestBodyPreviewAndParseTime(t *testing.T) {
	require.Equal(t, "hello", bodyPreview([]byte("hello"), 10))
	require.Equal(t, "hel…", bodyPreview([]byte("hello"), 3))
	require.Equal(t, "hex: 00 ff", bodyPreview([]byte{0, 0xff}, 10))
	at, err := parseTime("2026-03-04T05:06")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC), at)
	at, err = parseTime("2026-03-04T05:06:07+02:00")
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 4, 3, 6, 7, 0, time.UTC), at.UTC())
	at, err = parseTime(" ")
	require.NoError(t, err)
	require.True(t, at.IsZero())
	_, err = parseTime("tomorrow")
	require.Error(t, err)
}

func TestNextStaysInConsole(t *testing.T) {
	c := &Console{opts: DefaultOptions()}
	require.Equal(t, "/console/topics?q=a", c.next("/console/topics?q=a"))
	for _, bad := range []string{"", "//evil.example/console/", "https://evil.example/", "/console", "/other", "/console/\\evil"} {
		require.Equal(t, "/console/cluster", c.next(bad), bad)
	}
}

// table is the HTML of the table with id in body.
func table(body, id string) string {
	_, rest, _ := strings.Cut(body, `<table id="`+id+`"`)
	t, _, _ := strings.Cut(rest, "</table>")
	return t
}

// aclConfig is an ACL accounts file with an admin and an application account.
func aclConfig() acl.Config {
	return acl.Config{Accounts: []acl.AccountConfig{
		{AccessKey: "ferryAdmin", SecretKey: "admin-secret-1", Admin: true},
		{AccessKey: "appUser1", SecretKey: "app-secret-1"},
	}}
}
