package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/launch"
)

// ports are the listeners of a server mode, bound before anything else starts. A nil
// listener is a server the mode does not run.
type ports struct {
	namesrv, broker, http net.Listener
	controller, raft      net.Listener // ferry controller: controller.listen, controller.raftListen
}

// bindPorts binds, for the controller, its port (controller.listen) and its Raft port
// (controller.raftListen); otherwise the name server's port (namesrv.listen) unless mode
// is broker and the broker's (broker.listen) unless mode is namesrv; and the HTTP
// listener's (launch.HTTPListen) when it is on. An error names the setting and its flag.
func bindPorts(mode string, cfg *conf.Config) (ports, error) {
	var p ports
	var err error
	if mode == launch.ModeController {
		if p.controller, err = listen("controller.listen", "", cfg.Controller.Listen); err != nil {
			return ports{}, err
		}
		if p.raft, err = listen("controller.raftListen", "", cfg.Controller.RaftListen); err != nil {
			return ports{}, errors.Join(err, p.close())
		}
	} else if mode != "broker" {
		if p.namesrv, err = listen("namesrv.listen", "--namesrv-listen", cfg.NameServer.Listen); err != nil {
			return ports{}, err
		}
	}
	if mode != "namesrv" && mode != launch.ModeController {
		if p.broker, err = listen("broker.listen", "--broker-listen", cfg.Broker.Listen); err != nil {
			return ports{}, errors.Join(err, p.close())
		}
	}
	if addr := launch.HTTPListen(mode, cfg); addr != "" {
		key := "broker.httpListen"
		switch mode {
		case launch.ModeNamesrv:
			key = "namesrv.httpListen"
		case launch.ModeController:
			key = "controller.httpListen"
		}
		if p.http, err = listen(key, "--"+conf.FlagHTTPListen, addr); err != nil {
			return ports{}, errors.Join(err, p.close())
		}
	}
	return p, nil
}

// listen binds addr, the value of the setting key (flag flag, "" when it has none).
func listen(key, flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	hint := ""
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = " (another process has this port)"
	}
	if flag != "" {
		flag = " (flag " + flag + ")"
	}
	return nil, fmt.Errorf("cannot listen on %s %s%s: %w%s", key, addr, flag, err, hint)
}

// close closes the listeners not handed to a server yet.
func (p ports) close() error {
	var errs []error
	for _, ln := range []net.Listener{p.namesrv, p.broker, p.http, p.controller, p.raft} {
		errs = append(errs, closeListener(ln))
	}
	return errors.Join(errs...)
}

// closeBroker closes the broker's listener after the broker failed to start.
func (p ports) closeBroker() error { return closeListener(p.broker) }

// closeListener closes ln, if any; one already closed (by a server that took it) is fine.
func closeListener(ln net.Listener) error {
	if ln == nil {
		return nil
	}
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
