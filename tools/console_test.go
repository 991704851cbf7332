package tools_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/testutil"
)

func TestConsoleHashPassword(t *testing.T) {
	cmd := exec.Command(ferryctl(t), "console", "hash-password")
	cmd.Stdin = strings.NewReader("correct horse battery\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	hash := strings.TrimSpace(out.String())
	require.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse battery")))
	cost, err := bcrypt.Cost([]byte(hash))
	require.NoError(t, err)
	require.Equal(t, 12, cost)

	cmd = exec.Command(ferryctl(t), "console", "hash-password")
	cmd.Stdin = strings.NewReader("short\n")
	require.Error(t, cmd.Run(), "a short password is refused")
}

func TestConsoleRefusesToStartWithoutAccount(t *testing.T) {
	_, errOut, code := runEnv(t, []string{"FERRY_CONSOLE_USERS="}, "console", "--listen", testkit.FreeAddr(t))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no account")
	require.Contains(t, errOut, "hash-password")
}

// ferryctl console serves the console for the cluster -n names, until interrupted.
func TestConsoleServesCluster(t *testing.T) {
	c := testutil.StartCluster(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("alice-password"), bcrypt.MinCost)
	require.NoError(t, err)
	addr := testkit.FreeAddr(t)
	cmd := exec.Command(ferryctl(t), "-n", c.NamesrvAddr, "console", "--listen", addr, "--user", "alice:readonly:"+string(hash))
	cmd.Env = append(os.Environ(), "FERRY_CONSOLE_USERS=")
	var out, errb testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, <-exited, "stops cleanly on SIGINT: %s", errb.String())
	}()
	testkit.Eventually(t, 20*time.Second, func() bool { return strings.Contains(out.String(), "/console/") }, "console listening")
	require.Contains(t, out.String(), "http://"+addr+"/console/")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, m, string(body))
	resp, err = hc.PostForm("http://"+addr+"/console/login", url.Values{"user": {"alice"}, "password": {"alice-password"}, "token": {m[1]}})
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), c.BrokerAddr, "the cluster page lists the broker")
}
