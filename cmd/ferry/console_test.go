package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferrymq/ferry/console"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// A console enabled without an account does not start, and says how to add one; the
// ports it bound are released.
func TestConsoleWithoutAccountRefusesToStart(t *testing.T) {
	cfg := serveConfig(t, t.TempDir())
	cfg.Console.Enable = true
	err := serve(context.Background(), "standalone", cfg, zerolog.Nop(), mmap.OSFS{})
	require.ErrorIs(t, err, console.ErrNoAccount)
	require.Contains(t, err.Error(), "console.users")
	require.Contains(t, err.Error(), "hash-password")
	ln, err := net.Listen("tcp", cfg.Broker.HTTPListen)
	require.NoError(t, err, "the HTTP port is free again")
	require.NoError(t, ln.Close())

	cfg.Console.Users = []string{"alice:readonly:" + cheapHash(t, "alice-password")}
	cfg.Broker.HTTPListen = ""
	err = serve(context.Background(), "standalone", cfg, zerolog.Nop(), mmap.OSFS{})
	require.ErrorContains(t, err, "console.enable needs the HTTP listener")
}

// cheapHash is a bcrypt hash at the lowest cost.
func cheapHash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// ferry standalone serves the console at /console on its HTTP listener, to a
// console.users account and to an ACL file's account (console.aclAccounts), and the
// console sees the standalone's own broker.
func TestStandaloneServesConsole(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	require.NoError(t, os.WriteFile(aclFile, []byte("accounts:\n  - accessKey: opsAdmin1\n    secretKey: ops-secret-1\n    admin: true\n"), 0o600))
	cfg := serveConfig(t, filepath.Join(dir, "data"))
	cfg.Console.Enable, cfg.Console.ACLAccounts, cfg.Broker.ACLFile = true, true, aclFile
	cfg.Console.Users = []string{"alice:readonly:" + cheapHash(t, "alice-password")}
	logs := startServe(t, "standalone", cfg, mmap.OSFS{})
	testkit.Eventually(t, 30*time.Second, func() bool { return strings.Contains(logs.String(), readyLine) }, "ready")
	require.Contains(t, logs.String(), "/console/")

	base := "http://" + cfg.Broker.HTTPListen
	for _, acct := range [][2]string{{"alice", "alice-password"}, {"opsAdmin1", "ops-secret-1"}} {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		body := getBody(t, c, base+"/console")
		m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(body)
		require.NotNil(t, m, "/console leads to the login form: %s", body)
		resp, err := c.PostForm(base+"/console/login", url.Values{"user": {acct[0]}, "password": {acct[1]}, "token": {m[1]}})
		require.NoError(t, err)
		page, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, acct[0])
		require.Contains(t, string(page), cfg.Broker.Listen, "%s sees the cluster page with the broker", acct[0])
	}
}

// getBody GETs u with c and returns the body.
func getBody(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
