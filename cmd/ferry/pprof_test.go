package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

func TestPprofOffByDefault(t *testing.T) {
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	bindPprofFlag(fs)
	require.NoError(t, fs.Parse(nil))
	ran := false
	require.NoError(t, withPprof(fs, zerolog.Nop(), func() error { ran = true; return nil }))
	require.True(t, ran)
}

// The profiling server answers while serve runs and is gone once withPprof returns.
func TestPprofServesWhileServing(t *testing.T) {
	addr := testkit.FreeAddr(t)
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	bindPprofFlag(fs)
	require.NoError(t, fs.Parse([]string{"--pprof-listen", addr}))
	get := func(path string) (int, error) {
		cli := http.Client{Timeout: 5 * time.Second}
		resp, err := cli.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	err := withPprof(fs, zerolog.Nop(), func() error {
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/allocs"} {
			code, err := get(path)
			require.NoError(t, err, path)
			require.Equal(t, http.StatusOK, code, path)
		}
		return nil
	})
	require.NoError(t, err)
	_, err = get("/debug/pprof/")
	require.Error(t, err, "listener closed after serve returned")
}

func TestPprofBadAddressFailsBeforeServing(t *testing.T) {
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	bindPprofFlag(fs)
	require.NoError(t, fs.Parse([]string{"--pprof-listen", "bad"}))
	err := withPprof(fs, zerolog.Nop(), func() error {
		t.Fatal("serve ran despite the bad pprof address")
		return nil
	})
	require.ErrorContains(t, err, "pprof listen")
	var p *pprofServer
	require.NoError(t, p.Shutdown(context.Background()), "a nil server shuts down as a no-op")
}
