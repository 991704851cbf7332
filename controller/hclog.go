package controller

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// hclogAdapter is an hclog.Logger (what hashicorp/raft logs through) writing to a
// zerolog.Logger. Key/value arguments become fields; the name is a "raft" field.
type hclogAdapter struct {
	zl      zerolog.Logger
	name    string
	implied []any
	level   *atomic.Int32 // an hclog.Level, shared by With/Named children
}

var _ hclog.Logger = (*hclogAdapter)(nil)

// newHclog returns an adapter at the level of zl.
func newHclog(zl zerolog.Logger) *hclogAdapter {
	a := &hclogAdapter{zl: zl, level: new(atomic.Int32)}
	lvl := hclog.Info
	switch zl.GetLevel() {
	case zerolog.TraceLevel:
		lvl = hclog.Trace
	case zerolog.DebugLevel:
		lvl = hclog.Debug
	case zerolog.WarnLevel:
		lvl = hclog.Warn
	case zerolog.ErrorLevel, zerolog.FatalLevel, zerolog.PanicLevel:
		lvl = hclog.Error
	case zerolog.Disabled:
		lvl = hclog.Off
	}
	a.level.Store(int32(lvl))
	return a
}

// Log writes one message with key/value arguments.
func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	if level < hclog.Level(a.level.Load()) || level == hclog.Off {
		return
	}
	var e *zerolog.Event
	switch level {
	case hclog.Trace:
		e = a.zl.Trace()
	case hclog.Debug:
		e = a.zl.Debug()
	case hclog.Info:
		e = a.zl.Info()
	case hclog.Warn:
		e = a.zl.Warn()
	default:
		e = a.zl.Error()
	}
	if e == nil {
		return
	}
	if a.name != "" {
		e = e.Str("raft", a.name)
	}
	all := append(append([]any{}, a.implied...), args...)
	for i := 0; i < len(all); i += 2 {
		if i+1 == len(all) {
			e = e.Interface("EXTRA_VALUE_AT_END", all[i])
			break
		}
		key := fmt.Sprint(all[i])
		switch v := all[i+1].(type) {
		case error:
			e = e.AnErr(key, v)
		case fmt.Stringer:
			e = e.Stringer(key, v)
		default:
			e = e.Interface(key, v)
		}
	}
	e.Msg(msg)
}

// Trace logs at trace level.
func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }

// Debug logs at debug level.
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }

// Info logs at info level.
func (a *hclogAdapter) Info(msg string, args ...any) { a.Log(hclog.Info, msg, args...) }

// Warn logs at warn level.
func (a *hclogAdapter) Warn(msg string, args ...any) { a.Log(hclog.Warn, msg, args...) }

// Error logs at error level.
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(l hclog.Level) bool { return l >= hclog.Level(a.level.Load()) }

// IsTrace reports whether trace messages are written.
func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }

// IsDebug reports whether debug messages are written.
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }

// IsInfo reports whether info messages are written.
func (a *hclogAdapter) IsInfo() bool { return a.enabled(hclog.Info) }

// IsWarn reports whether warnings are written.
func (a *hclogAdapter) IsWarn() bool { return a.enabled(hclog.Warn) }

// IsError reports whether errors are written.
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

// ImpliedArgs returns the arguments added by With.
func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

// With returns a logger adding args to every message.
func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any{}, a.implied...), args...)
	return &c
}

// Name returns the logger's name.
func (a *hclogAdapter) Name() string { return a.name }

// Named returns a logger whose name has name appended.
func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

// ResetNamed returns a logger named name.
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

// SetLevel changes the level (of this logger and those derived from it).
func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level.Store(int32(level)) }

// GetLevel returns the level.
func (a *hclogAdapter) GetLevel() hclog.Level { return hclog.Level(a.level.Load()) }

// StandardLogger returns a standard library logger writing through the adapter.
func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer logging each line written to it.
func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return stdWriter{a: a, level: level}
}

// stdWriter logs the lines written to it.
type stdWriter struct {
	a     *hclogAdapter
	level hclog.Level
}

func (w stdWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.a.Log(w.level, strings.TrimSpace(string(line)))
	}
	return len(p), nil
}
