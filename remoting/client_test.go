package remoting

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// loneCallerSetups are the transports (plain TCP, TLS) the client tests run on.
func loneCallerSetups(t *testing.T) map[string]func(*ServerOptions, *ClientOptions) {
	pki := newTestPKI(t)
	return map[string]func(*ServerOptions, *ClientOptions){
		"plain": func(*ServerOptions, *ClientOptions) {},
		"tls": func(so *ServerOptions, co *ClientOptions) {
			if so != nil {
				so.TLS = pki.serverTLS(TLSEnforcing)
			}
			if co != nil {
				co.TLS = pki.clientTLS()
			}
		},
	}
}

func TestSyncAndAsyncCallersShareAConnection(t *testing.T) {
	for name, setup := range loneCallerSetups(t) {
		t.Run(name, func(t *testing.T) {
			s := testServer(t, func(o *ServerOptions) { setup(o, nil) }, map[int16]Handler{codeEcho: echo})
			c := testClient(t, func(o *ClientOptions) { setup(nil, o) })
			addr := s.Addr().String()
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for w := range 6 {
				wg.Go(func() {
					for i := range 300 {
						body := bytes.Repeat([]byte{byte(w)}, (i*w*997)%(100<<10))
						if w%2 == 0 { // synchronous callers, alone at times
							resp, err := c.Invoke(ctx, addr, &Command{Code: codeEcho, Body: body})
							if err == nil && !bytes.Equal(resp.Body, body) {
								err = fmt.Errorf("caller %d call %d: wrong body", w, i)
							}
							if err != nil {
								errs <- err
								return
							}
							continue
						}
						done := make(chan error, 1)
						err := c.InvokeAsync(ctx, addr, &Command{Code: codeEcho, Body: body}, func(resp *Command, err error) {
							if err == nil && !bytes.Equal(resp.Body, body) {
								err = fmt.Errorf("async caller %d call %d: wrong body", w, i)
							}
							done <- err
						})
						if err == nil {
							err = <-done
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}
