package observe_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/observe"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// start serves probes with tc on 127.0.0.1:0 and returns the base URL's host:port.
func start(t *testing.T, probes *observe.Probes, tc *remoting.TLSConfig) string {
	t.Helper()
	o := observe.DefaultOptions()
	o.Probes, o.TLS = probes, tc
	s, err := observe.New(o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.Start(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return ln.Addr().String()
}

// get fetches url with c and decodes the report.
func get(t *testing.T, c *http.Client, url string) (int, observe.Report) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err, url)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var r observe.Report
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return resp.StatusCode, r
}

// plainClient is an HTTP client that keeps no idle connection (goleak).
func plainClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// tlsClient trusts any certificate (the test's self-signed one).
func tlsClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}, //nolint:gosec // test certificate
		Timeout: 10 * time.Second}
}

// /readyz is 503 naming what each part lacks until every part is ready, then 200; the
// ready callback runs once, before the first 200. /healthz is 200 throughout, and 503
// naming the part once a part's server failed.
func TestReadyzAndHealthz(t *testing.T) {
	readyCalls := 0
	probes := observe.NewProbes(func() { readyCalls++ })
	probes.Set("broker", observe.Pending("store not recovered"))
	probes.Set("namesrv", observe.PartFuncs{})
	addr := start(t, probes, nil)
	c := plainClient()

	code, r := get(t, c, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, observe.Report{Missing: map[string][]string{"broker": {"store not recovered"}}}, r)
	code, r = get(t, c, "http://"+addr+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.True(t, r.OK)
	require.Zero(t, readyCalls)

	missing := []string{"not registered with a name server"}
	var serveErr error
	probes.Set("broker", observe.PartFuncs{
		MissingFunc:  func() []string { return missing },
		ServeErrFunc: func() error { return serveErr },
	})
	code, r = get(t, c, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, missing, r.Missing["broker"])

	missing = nil
	code, r = get(t, c, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, observe.Report{OK: true}, r)
	require.Equal(t, 1, readyCalls)
	code, _ = get(t, c, "http://"+addr+"/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, readyCalls, "once")

	serveErr = errors.New("accept: too many open files")
	code, r = get(t, c, "http://"+addr+"/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, []string{"failed: accept: too many open files"}, r.Missing["broker"])

	resp, err := c.Post("http://"+addr+"/readyz", "text/plain", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// WaitReady returns once the parts are ready, having run the ready callback.
func TestWaitReady(t *testing.T) {
	ready := make(chan struct{})
	probes := observe.NewProbes(func() { close(ready) })
	gate := make(chan struct{})
	probes.Set("broker", observe.PartFuncs{MissingFunc: func() []string {
		select {
		case <-gate:
			return nil
		default:
			return []string{"store not recovered"}
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- probes.WaitReady(ctx, time.Millisecond) }()
	select {
	case <-ready:
		t.Fatal("ready before the part was")
	case <-done:
		t.Fatal("WaitReady returned before the part was ready")
	default:
	}
	close(gate)
	require.True(t, <-done)
	<-ready

	cancel()
	never := observe.NewProbes(nil)
	never.Set("broker", observe.Pending("never"))
	require.False(t, never.WaitReady(ctx, time.Millisecond), "a cancelled wait")
}

// The listener follows the process's TLS mode: enforcing serves HTTPS only, permissive
// HTTPS and plain HTTP on one port, disabled plain HTTP.
func TestListenerFollowsTLSMode(t *testing.T) {
	certFile, keyFile := testutil.SelfSignedCert(t)
	cfg, err := remoting.LoadServerTLS(certFile, keyFile, "", false)
	require.NoError(t, err)
	probes := observe.NewProbes(nil)

	enforcing := start(t, probes, &remoting.TLSConfig{Mode: remoting.TLSEnforcing, Config: cfg})
	code, _ := get(t, tlsClient(), "https://"+enforcing+"/healthz")
	require.Equal(t, http.StatusOK, code)
	resp, err := plainClient().Get("http://" + enforcing + "/healthz")
	require.NoError(t, err, "Go's server answers a plain request on a TLS port")
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "enforcing refuses plain HTTP")

	permissive := start(t, probes, &remoting.TLSConfig{Mode: remoting.TLSPermissive, Config: cfg})
	code, _ = get(t, tlsClient(), "https://"+permissive+"/healthz")
	require.Equal(t, http.StatusOK, code)
	code, _ = get(t, plainClient(), "http://"+permissive+"/readyz")
	require.Equal(t, http.StatusOK, code)

	disabled := start(t, probes, &remoting.TLSConfig{Mode: remoting.TLSDisabled})
	code, _ = get(t, plainClient(), "http://"+disabled+"/healthz")
	require.Equal(t, http.StatusOK, code)
	resp, err = tlsClient().Get("https://" + disabled + "/healthz")
	if err == nil {
		require.NoError(t, resp.Body.Close())
	}
	require.Error(t, err, "disabled serves no TLS")
}

func TestOptionsValidate(t *testing.T) {
	o := observe.DefaultOptions()
	_, err := observe.New(o)
	require.ErrorIs(t, err, observe.ErrInvalidOptions)
	o.Probes = observe.NewProbes(nil)
	o.TLS = &remoting.TLSConfig{Mode: remoting.TLSEnforcing}
	_, err = observe.New(o)
	require.ErrorIs(t, err, observe.ErrInvalidOptions)
	o.TLS, o.ReadHeaderTimeout = nil, 0
	_, err = observe.New(o)
	require.ErrorIs(t, err, observe.ErrInvalidOptions)
}
