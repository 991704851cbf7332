//go:build e2e

package console

// The console in a real headless browser (Chromium driven over the DevTools protocol by
// chromedp): `make e2e-console`, which installs Debian's chromium when missing. Not part
// of `go test ./...` (the build tag e2e keeps it out). With FERRY_CONSOLE_SCREENSHOTS set
// to a directory, the main pages are saved there as PNG files (docs/images/ in the make
// target).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// screenshotsEnv names the directory the test saves page screenshots to.
const screenshotsEnv = "FERRY_CONSOLE_SCREENSHOTS"

// chromiumPath finds the browser: FERRY_CHROMIUM, else chromium or chromium-browser.
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("FERRY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium found: run `make e2e-console`, which installs it, or set FERRY_CHROMIUM")
	return ""
}

// newBrowser starts a headless browser with a fresh profile; the test's cleanup stops it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)))
	return ctx
}

// shot saves the viewport as name.png in the screenshots directory, when one is set.
func shot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		dir := os.Getenv(screenshotsEnv)
		if dir == "" {
			return nil
		}
		png, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		t.Logf("screenshot %s.png: %d bytes", name, len(png))
		return os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644)
	})
}

// login fills the login form and submits it.
func login(base, user, pass string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(base+"/console/login"),
		chromedp.WaitVisible(css("#user")),
		chromedp.SendKeys(css("#user"), user),
		chromedp.SendKeys(css("#password"), pass),
		chromedp.Click(css("#login")),
	)
}

// css is a CSS selector (a plain string would be a text search).
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// textOf reads the text of the element sel once it is visible.
func textOf(sel string, out *string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.WaitVisible(css(sel)), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		s, err := chromedp.Text(css(sel))(ctx, tg)
		*out = s
		return err
	}))
}

// eval runs a JavaScript expression for its effect.
func eval(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](js)(ctx, tg)
		return err
	})
}

// postForm builds a form with fields in the page and submits it: a write the page offers
// no button for.
func postForm(action string, fields map[string]string) chromedp.Action[chromedp.Void] {
	js := `(() => { const f = document.createElement('form'); f.method = 'post'; f.action = ` + quoteJS(action) + `;`
	for k, v := range fields {
		js += `{ const i = document.createElement('input'); i.type = 'hidden'; i.name = ` + quoteJS(k) + `; i.value = ` + v + `; f.appendChild(i); }`
	}
	js += `document.body.appendChild(f); f.submit(); return true; })()`
	return eval(js)
}

// quoteJS quotes s as a JavaScript string literal (s holds no quote or backslash).
func quoteJS(s string) string { return "'" + s + "'" }

// csrfJS reads the page's CSRF token.
const csrfJS = `document.querySelector('meta[name=csrf-token]').content`

func TestConsoleInBrowser(t *testing.T) {
	e := startEnv(t, nil)
	ctx := context.Background()
	base := e.url

	// A message to search for, and a group with a dead letter and an online consumer.
	const topic, key, group = "Orders", "order-4711", "billing"
	require.NoError(t, e.admin.CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 4, WriteQueues: 4}, client.Target{}))
	var mu sync.Mutex
	var resent []*client.MessageExt
	cc, err := client.New(client.WithNameServers(e.cluster.NamesrvAddr), client.WithInstanceName("billing-1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	pc, err := cc.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		if msgs[0].Topic == protocol.DLQTopic(group) {
			mu.Lock()
			resent = append(resent, msgs...)
			mu.Unlock()
			return client.ConsumeSuccess
		}
		if strings.Contains(string(msgs[0].Body), "declined") {
			return client.ConsumeRetryLater // to the dead-letter queue at once (no retries)
		}
		return client.ConsumeSuccess
	}, client.WithMaxReconsumeTimes(0), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()
	p, err := e.client.NewProducer("shop")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	m := message.NewMessage(topic, []byte(`{"order":4711,"amount":"42.00 EUR","status":"paid"}`))
	m.SetKeys(key)
	m.SetTags("paid")
	sent, err := p.Send(ctx, m)
	require.NoError(t, err)
	dead := message.NewMessage(topic, []byte(`{"order":4712,"amount":"9.99 EUR","status":"card declined"}`))
	dead.SetKeys("order-4712")
	deadSent, err := p.Send(ctx, dead)
	require.NoError(t, err)
	for i := range 20 {
		_, err := p.Send(ctx, message.NewMessage(topic, []byte(`{"order":`+string(rune('0'+i%10))+`}`)))
		require.NoError(t, err)
	}

	b := newBrowser(t)
	var text string

	// Login refused with a wrong password.
	require.NoError(t, chromedp.Do(b, login(base, adminName, wrongPass), textOf("#error", &text)))
	require.Contains(t, text, "wrong name or password")
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/login"), chromedp.WaitVisible(css("#user")), shot(t, "login")))

	// Login.
	require.NoError(t, chromedp.Do(b, login(base, adminName, adminPass), textOf("#who", &text)))
	require.Equal(t, "alice (readwrite)", text)
	require.NoError(t, chromedp.Do(b, textOf("#brokers", &text), shot(t, "cluster")))
	require.Contains(t, text, e.cluster.BrokerAddr)

	// A topic created in the browser is in the topic list.
	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(base+"/console/topics"),
		chromedp.WaitVisible(css("#new-topic")),
		chromedp.SendKeys(css("#new-topic"), "Invoices"),
		chromedp.Click(css("#create")),
		textOf("#flash", &text)))
	require.Contains(t, text, "topic Invoices created")
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/topics"), textOf("#topics", &text)))
	require.Contains(t, text, "Invoices")
	require.Contains(t, text, topic)
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/topics"), chromedp.WaitVisible(css("#topics")), shot(t, "topics")))
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/topic?t="+topic), chromedp.WaitVisible(css("#queues")), shot(t, "topic")))

	// Message search by key finds the sent message.
	deadline := time.Now().Add(20 * time.Second)
	for {
		require.NoError(t, chromedp.Do(b,
			chromedp.Navigate(base+"/console/messages"),
			chromedp.WaitVisible(css("#by-key")),
			chromedp.SendKeys(css(`#by-key input[name="topic"]`), topic),
			chromedp.SendKeys(css(`#by-key input[name="key"]`), key),
			chromedp.Submit(css(`#by-key input[name="key"]`)),
			chromedp.WaitVisible(css("#found, #error")),
			textOf("main", &text)))
		if strings.Contains(text, sent.MsgID) || time.Now().After(deadline) {
			break
		}
	}
	require.Contains(t, text, sent.MsgID)
	require.Contains(t, text, `"status":"paid"`)
	require.NoError(t, chromedp.Do(b, shot(t, "messages")))
	require.NoError(t, chromedp.Do(b, chromedp.Click(css("#found a")), textOf("#body", &text), shot(t, "message")))
	require.Contains(t, text, "4711")

	// The dead letter is resent and reaches the group's consumer.
	deadline = time.Now().Add(20 * time.Second)
	for {
		require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/dlq?g="+group), textOf("main", &text)))
		if strings.Contains(text, deadSent.MsgID) && strings.Contains(text, "Resend") || time.Now().After(deadline) {
			break
		}
	}
	require.Contains(t, text, deadSent.MsgID)
	require.NoError(t, chromedp.Do(b, shot(t, "dlq"), chromedp.Click(css(`form.resend button`)), textOf("#flash", &text)))
	require.Contains(t, text, "CR_SUCCESS")
	mu.Lock()
	require.Len(t, resent, 1)
	require.Equal(t, deadSent.MsgID, resent[0].MsgID)
	mu.Unlock()
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/group?g="+group), chromedp.WaitVisible(css("#progress")), shot(t, "group")))
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/config?q=flush"), chromedp.WaitVisible(css("details")), shot(t, "config")))

	// A write without the CSRF token is refused: the create form, its token removed.
	require.NoError(t, chromedp.Do(b,
		chromedp.Navigate(base+"/console/topics"),
		chromedp.WaitVisible(css("#new-topic")),
		eval(`document.querySelector('#create-topic input[name=csrf]').remove()`),
		chromedp.SendKeys(css("#new-topic"), "Forged"),
		chromedp.Click(css("#create")),
		textOf("#error", &text)))
	require.Contains(t, text, "CSRF token")
	_, err = e.admin.TopicRoute(ctx, "Forged")
	require.ErrorIs(t, err, client.ErrNoRoute)

	// A read-only account sees no write form and cannot write.
	require.NoError(t, chromedp.Do(b,
		chromedp.Click(css("#logout")),
		chromedp.WaitVisible(css("#user")),
		login(base, readerName, readerPass), textOf("#who", &text)))
	require.Equal(t, "bob (readonly)", text)
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(base+"/console/topics"), chromedp.WaitVisible(css("#topics"))))
	forms, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('#create-topic').length`))
	require.NoError(t, err)
	require.Zero(t, forms)
	require.NoError(t, chromedp.Do(b,
		postForm("/console/topics", map[string]string{"csrf": csrfJS, "topic": "'ReaderTopic'"}),
		textOf("#error", &text)))
	require.Contains(t, text, "read-only")
	_, err = e.admin.TopicRoute(ctx, "ReaderTopic")
	require.ErrorIs(t, err, client.ErrNoRoute)
}
