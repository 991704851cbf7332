package conf

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// SourceKind names the layer a setting's effective value came from (see Load
// for their precedence).
type SourceKind string

// Source kinds, lowest precedence first.
const (
	// SourceDefault is the built-in default (DefaultConfig).
	SourceDefault SourceKind = "default"
	// SourceFile is the YAML config file.
	SourceFile SourceKind = "file"
	// SourceEnv is a FERRY_* environment variable.
	SourceEnv SourceKind = "env"
	// SourceFlag is a flag set on the command line.
	SourceFlag SourceKind = "flag"
)

// Source is where a setting's effective value came from.
type Source struct {
	// Kind is the layer.
	Kind SourceKind `json:"kind"`
	// File is the config file's path (SourceFile only).
	File string `json:"file,omitempty"`
	// Line is the 1-based line of the key in File (SourceFile only).
	Line int `json:"line,omitempty"`
	// Name is the environment variable (SourceEnv) or the flag with its
	// dashes (SourceFlag), e.g. FERRY_BROKER_LISTEN or --data-dir.
	Name string `json:"name,omitempty"`
}

// String renders s as "default", "file broker.yaml:29",
// "env FERRY_BROKER_LISTEN" or "flag --data-dir".
func (s Source) String() string {
	switch s.Kind {
	case SourceFile:
		return fmt.Sprintf("file %s:%d", s.File, s.Line)
	case SourceEnv, SourceFlag:
		return string(s.Kind) + " " + s.Name
	}
	return string(s.Kind)
}

// Setting describes one configuration key as Load resolved it.
type Setting struct {
	// Key is the dotted key, e.g. broker.flushDiskType.
	Key string `json:"key"`
	// Value is the effective value in the syntax the config file accepts
	// (durations "30s", sizes "16MiB", lists "a:9876,b:9876"); "" is empty.
	Value string `json:"value"`
	// Default is the built-in default in the same syntax.
	Default string `json:"default"`
	// Source is where Value came from.
	Source Source `json:"source"`
	// Env is the environment variable that sets the key (EnvVarName).
	Env string `json:"env"`
	// Flag is the flag that sets the key, with its dashes, or "" if none.
	Flag string `json:"flag,omitempty"`
	// Meaning is a one-line description of the key.
	Meaning string `json:"meaning"`
}

// Explain loads the configuration exactly as Load does — same sources, same
// errors — and describes every key, in the order of Keys: its effective
// value, where that value came from (a file source carries the key's line),
// its default and its meaning.
func Explain(opts LoadOptions) (*Config, []Setting, error) {
	cfg, sources, err := load(opts)
	if err != nil {
		return nil, nil, err
	}
	meanings := keyMeanings()
	flags := map[string]string{}
	for _, b := range flagBindings(opts.Server) {
		flags[b.key] = "--" + b.name
	}
	eff := reflect.ValueOf(*cfg)
	def := reflect.ValueOf(DefaultConfig())
	var out []Setting
	for _, s := range settingsOf(eff.Type()) {
		out = append(out, Setting{
			Key:     s.key,
			Value:   formatValue(eff.FieldByIndex(s.index)),
			Default: formatValue(def.FieldByIndex(s.index)),
			Source:  sources[s.key],
			Env:     EnvVarName(s.key),
			Flag:    flags[s.key],
			Meaning: meanings[s.key],
		})
	}
	return cfg, out, nil
}

// formatValue renders a setting's value in config-file syntax, so that the
// loader reads it back to the same value.
func formatValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return formatDuration(x)
	case int64: // every int64 setting is a byte size (see decodeHook)
		return FormatByteSize(x)
	case []string:
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v.Interface())
}

// formatDuration is time.Duration.String without the zero tails: "72h", "2m",
// "1m30s", "500ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
