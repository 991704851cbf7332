package tools

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
)

// --tls gives the client a TLS configuration; without it the client dials plain TCP.
func TestTLSFlagReachesTheClient(t *testing.T) {
	apply := func(e *env) client.Options {
		var o client.Options
		for _, opt := range e.clientOptions() {
			opt(&o)
		}
		return o
	}
	require.Nil(t, apply(&env{namesrv: "127.0.0.1:9876"}).TLS)
	o := apply(&env{namesrv: "127.0.0.1:9876", useTLS: true})
	require.NotNil(t, o.TLS)
	require.Equal(t, []string{"127.0.0.1:9876"}, o.NameServers)
}
