// Package logging builds the zerolog loggers that Ferry's servers are given
// through their Options.
//
// There is no global logger: the command builds one Logger with New and passes
// it (or a Component child of it) down to every package. This package never
// touches zerolog's global state (the zerolog/log package, SetGlobalLevel,
// TimeFieldFormat, TimestampFunc), so several servers in one process — and
// parallel tests — cannot interfere with each other's logging.
//
// Output formats:
//
//   - "json": one JSON object per line with the fields "level", "time"
//     (RFC 3339 with milliseconds, local time zone), "message" and any context
//     fields. This is what log shippers expect.
//   - "console": zerolog's human-readable ConsoleWriter. Colours are used only
//     when the output is a terminal.
//   - "auto" (the default): "console" when Output is an *os.File that is a
//     terminal, "json" otherwise (files, pipes, buffers).
package logging

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Format names accepted by Options.Format.
const (
	// FormatAuto selects FormatConsole on a terminal and FormatJSON otherwise.
	FormatAuto = "auto"
	// FormatConsole is zerolog's human-readable console output.
	FormatConsole = "console"
	// FormatJSON is one JSON object per line.
	FormatJSON = "json"
)

// TimeLayout is the layout of the "time" field written on every event:
// RFC 3339 with millisecond precision.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// consoleTimeLayout is the timestamp layout of console output.
const consoleTimeLayout = "2006-01-02 15:04:05.000"

// ErrInvalidOptions is wrapped by every error returned from Options.Validate,
// New and ParseLevel.
var ErrInvalidOptions = errors.New("logging: invalid options")

// Options configures New. The zero value is usable: an empty Level means
// "info", an empty Format means "auto" and a nil Output means os.Stderr.
type Options struct {
	// Level is the minimum level written: "trace", "debug", "info", "warn" or
	// "error" (case-insensitive). Default "info".
	Level string
	// Format is "auto", "console" or "json". Default "auto".
	Format string
	// Output receives the log lines. Default os.Stderr.
	Output io.Writer
}

// DefaultOptions returns info-level, auto-format logging to os.Stderr.
func DefaultOptions() Options {
	return Options{Level: "info", Format: FormatAuto, Output: os.Stderr}
}

// Validate reports whether Level and Format are known values. Empty values are
// valid and mean their defaults.
func (o Options) Validate() error {
	if o.Level != "" {
		if _, err := ParseLevel(o.Level); err != nil {
			return err
		}
	}
	switch strings.ToLower(strings.TrimSpace(o.Format)) {
	case "", FormatAuto, FormatConsole, FormatJSON:
	default:
		return fmt.Errorf("%w: format must be auto, console or json, got %q", ErrInvalidOptions, o.Format)
	}
	return nil
}

// LevelNames are the level names ParseLevel accepts (besides "warning"), most
// verbose first: the one list the configuration and the flags' help use.
var LevelNames = [...]string{"trace", "debug", "info", "warn", "error"}

// ParseLevel converts "trace", "debug", "info", "warn" (or "warning") or
// "error", case-insensitively, to a zerolog.Level. Any other string is an
// error wrapping ErrInvalidOptions.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("%w: level must be trace, debug, info, warn or error, got %q", ErrInvalidOptions, s)
}

// New builds a logger from opts. Every event carries a "time" field (see
// TimeLayout); events below the configured level are discarded.
func New(opts Options) (zerolog.Logger, error) {
	if err := opts.Validate(); err != nil {
		return zerolog.Nop(), err
	}
	level := zerolog.InfoLevel
	if opts.Level != "" {
		level, _ = ParseLevel(opts.Level) // validated above
	}
	out := opts.Output
	if out == nil {
		out = os.Stderr
	}
	terminal := isTerminal(out)

	w := out
	switch strings.ToLower(strings.TrimSpace(opts.Format)) {
	case FormatConsole:
		w = consoleWriter(out, !terminal)
	case FormatJSON:
	default: // "" or auto
		if terminal {
			w = consoleWriter(out, false)
		}
	}
	return zerolog.New(w).Level(level).Hook(timestampHook{}), nil
}

// Nop returns a logger that discards everything; handy in tests and as the
// default logger of an Options struct.
func Nop() zerolog.Logger {
	return zerolog.Nop()
}

// Component derives the logger of one server component (for example
// "namesrv" or "broker" in standalone mode) from parent: it adds the field
// component=name and, when level is not empty, sets that component's own
// minimum level, which may be more or less verbose than the parent's.
func Component(parent zerolog.Logger, name, level string) (zerolog.Logger, error) {
	l := parent.With().Str("component", name).Logger()
	if level == "" {
		return l, nil
	}
	lvl, err := ParseLevel(level)
	if err != nil {
		return parent, err
	}
	return l.Level(lvl), nil
}

// timestampHook adds the "time" field to each written event. It is used
// instead of zerolog's Context.Timestamp so that the precision does not depend
// on zerolog's global TimeFieldFormat.
type timestampHook struct{}

// Run implements zerolog.Hook.
func (timestampHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("time", time.Now().Format(TimeLayout))
}

func consoleWriter(out io.Writer, noColor bool) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{Out: out, NoColor: noColor, TimeFormat: consoleTimeLayout}
}

// isTerminal reports whether w is an *os.File attached to a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}
