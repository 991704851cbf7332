package conf

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix starts every environment variable Load reads.
const EnvPrefix = "FERRY_"

// ConfigFileEnv names the environment variable holding the config file path
// when neither LoadOptions.ConfigFile nor --config gives one.
const ConfigFileEnv = "FERRY_CONFIG"

// LoadOptions says where Load reads configuration from. The zero value loads
// the defaults overridden by the real process environment.
type LoadOptions struct {
	// ConfigFile is the YAML file to read. Empty means the value of the
	// --config flag in Flags if set, else $FERRY_CONFIG, else no file.
	ConfigFile string
	// LookupEnv reads an environment variable. Nil means os.LookupEnv; tests
	// inject a map lookup.
	LookupEnv func(key string) (string, bool)
	// Flags holds the command line, usually registered by BindFlags. Only
	// flags that were explicitly set override other sources. Nil means no
	// flags.
	Flags *pflag.FlagSet
	// Server is the server the command runs ("namesrv", "broker", "standalone",
	// "controller"); it decides the key of the flags that depend on it: --http-listen
	// sets namesrv.httpListen for "namesrv", controller.httpListen for "controller",
	// broker.httpListen otherwise.
	Server string
}

// Load builds a validated Config. Sources, each overriding the one before:
//
//  1. the defaults (DefaultConfig);
//  2. the YAML file, in which an unknown key is an error;
//  3. environment variables, one per key, named by EnvVarName
//     (FERRY_BROKER_LISTEN for broker.listen);
//  4. flags registered by BindFlags that were set on the command line.
//
// Every error names the key at fault (or, for a YAML syntax error, the file
// and line, as a *SyntaxError) and wraps ErrInvalidConfig, except a file that
// cannot be read (an *fs.PathError). Explain loads the same way and also says
// where each value came from.
func Load(opts LoadOptions) (*Config, error) {
	cfg, _, err := load(opts)
	return cfg, err
}

// load is Load that also returns the source of every key's value.
func load(opts LoadOptions) (*Config, map[string]Source, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	path := opts.ConfigFile
	if path == "" && opts.Flags != nil {
		if f := opts.Flags.Lookup(FlagConfig); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	if path == "" {
		path, _ = lookup(ConfigFileEnv)
	}

	settings := settingsOf(reflect.TypeOf(Config{}))
	sources := make(map[string]Source, len(settings))
	v := viper.New()
	defaults := reflect.ValueOf(DefaultConfig())
	for _, s := range settings {
		v.SetDefault(s.key, defaults.FieldByIndex(s.index).Interface())
		sources[s.key] = Source{Kind: SourceDefault}
	}

	values := map[string]any{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("conf: read config file: %w", err)
		}
		var lines map[string]int
		if values, lines, err = parseYAML(path, data, settings); err != nil {
			return nil, nil, err
		}
		for key, line := range lines {
			sources[key] = Source{Kind: SourceFile, File: path, Line: line}
		}
	}
	for _, s := range settings {
		if val, ok := lookup(EnvVarName(s.key)); ok {
			setPath(values, strings.Split(strings.ToLower(s.key), "."), val)
			sources[s.key] = Source{Kind: SourceEnv, Name: EnvVarName(s.key)}
		}
	}
	if err := v.MergeConfigMap(values); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if opts.Flags != nil {
		for _, b := range flagBindings(opts.Server) {
			if f := opts.Flags.Lookup(b.name); f != nil && f.Changed {
				if err := v.BindPFlag(b.key, f); err != nil {
					return nil, nil, fmt.Errorf("conf: bind flag --%s: %w", b.name, err)
				}
				sources[b.key] = Source{Kind: SourceFlag, Name: "--" + b.name}
			}
		}
	}

	var cfg Config
	if err := v.Unmarshal(&cfg, viper.DecodeHook(decodeHook()), func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = true
	}); err != nil {
		return nil, nil, decodeError(err, v.Get)
	}
	if err := checkAssignedKeys(&cfg, sources); err != nil {
		return nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	return &cfg, sources, nil
}

// EnvVarName is the environment variable of a key: "FERRY_", then the key's
// parts upper-cased with camelCase words split by '_', parts joined by '_':
//
//	broker.listen                 FERRY_BROKER_LISTEN
//	broker.flushDiskType          FERRY_BROKER_FLUSH_DISK_TYPE
//	broker.namesrvAddrs           FERRY_BROKER_NAMESRV_ADDRS
//	broker.workers.send           FERRY_BROKER_WORKERS_SEND
//	namesrv.brokerExpiry          FERRY_NAMESRV_BROKER_EXPIRY
//	log.level                     FERRY_LOG_LEVEL
//
// Values use the same syntax as the YAML file; lists are separated by ';' or
// ','. A variable that is set but empty sets the key to an empty value (which
// Validate may reject).
func EnvVarName(key string) string {
	var b strings.Builder
	b.WriteString(EnvPrefix)
	for i, part := range strings.Split(key, ".") {
		if i > 0 {
			b.WriteByte('_')
		}
		rs := []rune(part)
		for j, r := range rs {
			if j > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[j-1]) || unicode.IsDigit(rs[j-1])) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// Keys lists every configuration key in declaration order, e.g.
// "namesrv.listen", "broker.workers.send", "log.level".
func Keys() []string {
	settings := settingsOf(reflect.TypeOf(Config{}))
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}

// setting is one leaf key of Config, the index path of its field and the field's tags
// (the key's row in the key table, see KeyTable).
type setting struct {
	key   string
	index []int
	tag   reflect.StructTag
}

// settingsOf walks t's fields by their mapstructure tags; nested structs are
// sections, every other field is a leaf setting.
func settingsOf(t reflect.Type) []setting {
	var out []setting
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key := prefix + f.Tag.Get("mapstructure")
			idx := append(append([]int(nil), index...), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, key+".", idx)
				continue
			}
			out = append(out, setting{key: key, index: idx, tag: f.Tag})
		}
	}
	walk(t, "", nil)
	return out
}

// parseYAML checks the document's keys against settings — unknown keys,
// case-insensitive duplicates and scalars where a section belongs are errors
// naming the key and its line — and returns its mapping with lower-cased keys,
// and the line of every key it sets to a value (a key left empty, which Load
// treats as unset, is not listed).
func parseYAML(path string, data []byte, settings []setting) (map[string]any, map[string]int, error) {
	leaves := map[string]string{}
	sections := map[string]string{}
	for _, s := range settings {
		leaves[strings.ToLower(s.key)] = s.key
		parts := strings.Split(s.key, ".")
		for i := 1; i < len(parts); i++ {
			sec := strings.Join(parts[:i], ".")
			sections[strings.ToLower(sec)] = sec
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, syntaxError(path, data, err)
	}
	lines := map[string]int{}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return map[string]any{}, lines, nil
	}
	var walk func(n *yaml.Node, prefix string) error
	walk = func(n *yaml.Node, prefix string) error {
		if n.Kind != yaml.MappingNode {
			name := strings.TrimSuffix(prefix, ".")
			if name == "" {
				name = "(top level)"
			}
			return invalid(name, "%s line %d: must be a mapping of settings", path, n.Line)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			name := prefix + k.Value
			lc := strings.ToLower(name)
			if k.Kind != yaml.ScalarNode {
				return invalid(prefix+"?", "%s line %d: keys must be strings", path, k.Line)
			}
			if seen[lc] {
				return invalid(name, "%s line %d: duplicate key", path, k.Line)
			}
			seen[lc] = true
			if key, ok := leaves[lc]; ok {
				if !isNull(val) {
					lines[key] = k.Line
				}
				continue
			}
			if _, ok := sections[lc]; ok {
				if isNull(val) {
					continue
				}
				if err := walk(val, name+"."); err != nil {
					return err
				}
				continue
			}
			msg := fmt.Sprintf("%s line %d: unknown key", path, k.Line)
			if s := suggest(lc, leaves, sections); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			return invalid(name, "%s", msg)
		}
		return nil
	}
	if err := walk(doc.Content[0], ""); err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := doc.Decode(&m); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, path, err)
	}
	return lowerKeys(m), lines, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// suggest returns the known key closest to an unknown one, if any is within
// edit distance 2 (case-insensitive).
func suggest(lc string, known ...map[string]string) string {
	best, bestDist := "", 3
	var cands []string
	for _, m := range known {
		for k := range m {
			cands = append(cands, k)
		}
	}
	sort.Strings(cands) // deterministic ties
	for _, k := range cands {
		if d := editDistance(lc, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	for _, m := range known {
		if canonical, ok := m[best]; ok {
			return canonical
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lowerKeys lower-cases the keys of nested string-keyed maps so that values
// from the file and from the environment land on the same entries.
func lowerKeys(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = lowerKeys(sub)
		}
		out[strings.ToLower(k)] = v
	}
	return out
}

// setPath stores val at the nested path, creating or replacing intermediate
// maps.
func setPath(m map[string]any, path []string, val any) {
	for _, p := range path[:len(path)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = val
}

// decodeHook converts the textual forms of the file and the environment:
// durations must be strings in Go syntax (a bare number would silently mean
// nanoseconds); int64 fields take ParseByteSize strings, so every int64 field
// of Config must be a byte size (counts and ids are int); []string fields
// take ';'- or ','-separated strings.
func decodeHook() mapstructure.DecodeHookFuncType {
	durationType := reflect.TypeOf(time.Duration(0))
	int64Type := reflect.TypeOf(int64(0))
	strSliceType := reflect.TypeOf([]string(nil))
	return func(from, to reflect.Type, data any) (any, error) {
		switch to {
		case durationType:
			if from == durationType {
				return data, nil
			}
			if s, ok := data.(string); ok {
				return time.ParseDuration(strings.TrimSpace(s))
			}
			return nil, fmt.Errorf("want a duration with a unit such as \"500ms\" or \"30s\", got %v", data)
		case int64Type:
			if s, ok := data.(string); ok {
				return ParseByteSize(s)
			}
		case strSliceType:
			switch d := data.(type) {
			case string:
				return splitList(d), nil
			case []string:
				return splitList(strings.Join(d, ",")), nil
			case []any:
				out := []string{}
				for _, e := range d {
					out = append(out, splitList(fmt.Sprint(e))...)
				}
				return out, nil
			}
		}
		return data, nil
	}
}

// decodeError turns mapstructure's joined errors into errors of the form
// "invalid configuration: broker.flushInterval: ...", one per bad key.
// valueOf returns a key's raw value, shown when the message lacks it.
func decodeError(err error, valueOf func(key string) any) error {
	var out []error
	var walk func(err error)
	walk = func(err error) {
		switch e := err.(type) { //nolint:errorlint // walks the error tree one node at a time
		case *mapstructure.DecodeError:
			inner := e.Unwrap()
			if hasDecodeError(inner) {
				walk(inner)
				return
			}
			msg := inner.Error()
			if v := valueOf(e.Name()); v != nil && !strings.Contains(msg, fmt.Sprint(v)) {
				msg += fmt.Sprintf(" (got %q)", fmt.Sprint(v))
			}
			out = append(out, invalid(e.Name(), "%s", msg))
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			if inner := errors.Unwrap(err); inner != nil && hasDecodeError(inner) {
				walk(inner)
				return
			}
			out = append(out, fmt.Errorf("%w: %w", ErrInvalidConfig, err))
		}
	}
	walk(err)
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

func hasDecodeError(err error) bool {
	var de *mapstructure.DecodeError
	return errors.As(err, &de)
}

// checkAssignedKeys refuses, in controller mode, a broker role or id set by any source,
// even to its default: the controller assigns them (Validate sees only values, so it
// refuses the other values).
func checkAssignedKeys(cfg *Config, sources map[string]Source) error {
	if !cfg.Broker.ControllerMode {
		return nil
	}
	for _, key := range []string{"broker.brokerId", "broker.brokerRole"} {
		if src := sources[key]; src.Kind != SourceDefault {
			return invalid(key, "must not be set with broker.controllerMode: the controller assigns it (set by %s)", src)
		}
	}
	return nil
}
