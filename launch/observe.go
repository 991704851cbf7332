package launch

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/observe"
)

// StandaloneHTTPListen is where `ferry standalone` serves /healthz and /readyz when
// broker.httpListen is not set (beside the name server's 9876).
const StandaloneHTTPListen = "127.0.0.1:9880"

// ModeNamesrv is the server mode of `ferry namesrv` (conf.ServerNamesrv).
const ModeNamesrv = conf.ServerNamesrv

// HTTPListen is the address of the HTTP listener (package observe) of server mode
// ("namesrv", "broker", "standalone" or "controller"), "" when off: namesrv.httpListen
// for the name server, controller.httpListen for the controller, broker.httpListen
// otherwise (standalone serves one listener for both servers).
func HTTPListen(mode string, cfg *conf.Config) string {
	switch mode {
	case ModeNamesrv:
		return cfg.NameServer.HTTPListen
	case ModeController:
		return cfg.Controller.HTTPListen
	}
	return cfg.Broker.HTTPListen
}

// ObserveOptions maps the configuration of server mode onto observe.Options with probes:
// the listener's TLS is the process's (the name server's for namesrv, the controller's
// for controller, the broker's otherwise).
func ObserveOptions(mode string, cfg *conf.Config, probes *observe.Probes, log zerolog.Logger) (observe.Options, error) {
	o := observe.DefaultOptions()
	o.Probes, o.Logger = probes, log
	var err error
	switch mode {
	case ModeNamesrv:
		n := cfg.NameServer
		o.TLS, err = serverTLS(n.TLSMode, n.TLSCertFile, n.TLSKeyFile, n.TLSClientCAFile, n.TLSRequireClientCert)
	case ModeController:
		c := cfg.Controller
		o.TLS, err = serverTLS(c.TLSMode, c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile, c.TLSRequireClientCert)
	default:
		b := cfg.Broker
		o.TLS, err = serverTLS(b.TLSMode, b.TLSCertFile, b.TLSKeyFile, b.TLSClientCAFile, b.TLSRequireClientCert)
	}
	if err != nil {
		return o, fmt.Errorf("launch: HTTP listener: %w", err)
	}
	return o, o.Validate()
}
