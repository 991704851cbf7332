package conf

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// The key table is the configuration structs themselves: every leaf field of Config is
// one key, and its struct tags are that key's row —
//
//	mapstructure  the key's last part (the section structs give the rest)
//	default       the built-in default, in config-file syntax ("16MiB", "30s", "a,b")
//	meaning       one line for `ferry config`
//	option        the field the key sets in its server's Options: broker.Options for
//	              broker.*, nameserver.Options for namesrv.*; a dotted path ("Store.Dir")
//	process       instead of option: the part of the program that applies the key
//	              ("command": the ferry command itself, e.g. its listener or logging;
//	              "failover": the failover agent of a broker in controller mode)
//	property      the RocketMQ property GET_BROKER_CONFIG reports the key's value under,
//	              with an optional format after a comma (see PropertyFormat)
//
// so a setting is added with one field (its row), the Options field it sets and the code
// that uses that; DefaultConfig, Keys, Explain (`ferry config`), the sample file test,
// package launch (Options and GET_BROKER_CONFIG) all read the table.

// PropertyFormat says how GET_BROKER_CONFIG writes a value that RocketMQ states in another
// unit than the Options field holds. The empty format writes the value as RocketMQ does
// for its type: durations in milliseconds, fractions as percentages, lists joined by ';'.
type PropertyFormat string

// Property formats beyond the type's own.
const (
	// PropertyHours writes a duration in whole hours (fileReservedTime).
	PropertyHours PropertyFormat = "hours"
	// PropertyUnitBytes writes a count of 20-byte consume-queue units in bytes
	// (mappedFileSizeConsumeQueue).
	PropertyUnitBytes PropertyFormat = "unitbytes"
)

// ProcessCommand marks a key the ferry command applies itself (Key.Process): its
// listener address, its logging.
const ProcessCommand = "command"

// ProcessFailover marks a broker key the failover agent applies (Key.Process): the
// controllers it talks to in controller mode, and how often.
const ProcessFailover = "failover"

// Key is one row of the key table (see the tags above): a configuration key and what is
// known about it besides the code that uses its value.
type Key struct {
	// Name is the dotted key, e.g. broker.flushDiskType.
	Name string
	// Default is the built-in default in config-file syntax.
	Default string
	// Meaning is the one-line description `ferry config` shows.
	Meaning string
	// Option is the path of the field the key sets in its server's Options
	// (broker.Options for broker.*, nameserver.Options for namesrv.*), e.g.
	// "Store.FlushInterval"; empty when Process is set.
	Option string
	// Process names what applies a key that sets no server option (ProcessCommand).
	Process string
	// Property is the RocketMQ property GET_BROKER_CONFIG reports the value under, or "".
	Property string
	// PropertyFormat is how that property is written ("" for the type's own way).
	PropertyFormat PropertyFormat

	index []int // of the field in Config
}

// Section is the key's first part: "broker", "namesrv", "log" or "console".
func (k Key) Section() string {
	s, _, _ := strings.Cut(k.Name, ".")
	return s
}

// KeyTable returns the rows of every key, in the order of Keys.
func KeyTable() []Key {
	settings := settingsOf(typeOfConfig())
	out := make([]Key, len(settings))
	for i, s := range settings {
		out[i] = keyOf(s)
	}
	return out
}

// keyOf reads a setting's row from its field's tags.
func keyOf(s setting) Key {
	prop, format, _ := strings.Cut(s.tag.Get("property"), ",")
	return Key{
		Name:           s.key,
		Default:        s.tag.Get("default"),
		Meaning:        s.tag.Get("meaning"),
		Option:         s.tag.Get("option"),
		Process:        s.tag.Get("process"),
		Property:       prop,
		PropertyFormat: PropertyFormat(format),
		index:          s.index,
	}
}

// keyMeanings maps every key to its meaning (Key.Meaning).
func keyMeanings() map[string]string {
	m := map[string]string{}
	for _, k := range KeyTable() {
		m[k.Name] = k.Meaning
	}
	return m
}

// defaultsOf returns a section struct of type T holding the default of each of its keys,
// decoded from the table as Load decodes a config file. The table's defaults are tested
// to decode, so an error here is a bug in a tag and panics.
func defaultsOf[T any]() T {
	var out T
	values := map[string]any{}
	for _, s := range settingsOf(reflect.TypeOf(out)) {
		if def, ok := s.tag.Lookup("default"); ok {
			setPath(values, strings.Split(s.key, "."), def)
		}
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook:       decodeHook(),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		Result:           &out,
	})
	if err == nil {
		err = dec.Decode(values)
	}
	if err != nil {
		panic(fmt.Sprintf("conf: the default of a %T key does not decode: %v", out, err))
	}
	return out
}

// typeOfConfig is the type the key table is read from.
func typeOfConfig() reflect.Type { return reflect.TypeOf(Config{}) }

// In returns the key's value in c: the field of its row, addressable.
func (k Key) In(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index)
}

// checkKeys runs the check tag of every key of a section struct (prefix is its section's
// name and a dot): the checks of one value alone, each error naming the key. The rules
// between keys follow in the section's Validate.
func checkKeys(section any, prefix string) error {
	v := reflect.ValueOf(section)
	for _, s := range settingsOf(v.Type()) {
		if check := s.tag.Get("check"); check != "" {
			if err := checkValue(prefix+s.key, check, v.FieldByIndex(s.index)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkValue applies one check of the key table to the value of key:
//
//	listen         a host:port to listen on (checkListenAddr)
//	listenOrOff    a host:port to listen on, or "" for none
//	dialList       at least one host:port to connect to (checkDialAddr)
//	name           a broker or cluster name (checkName)
//	notEmpty       not ""
//	positive       a duration or number above 0
//	notNegative    a number not below 0
//	percent        a whole percentage, 1 to 100
//	range=LO..HI   a number from LO to HI
//	frameSize      a remoting frame size (checkFrameSize)
//	oneOf=A|B|C    one of the names; oneOfFold: case-insensitively
//	logLevel       a log level; logLevel=inherit: or "" for log.level's
//	deleteWhen     hours as ParseDeleteWhen reads them
//	delayLevels    a delay level table as ParseDelayLevels reads it
func checkValue(key, check string, v reflect.Value) error {
	name, arg, _ := strings.Cut(check, "=")
	switch name {
	case "listen":
		return checkListenAddr(key, v.String())
	case "listenOrOff":
		if v.String() == "" {
			return nil
		}
		return checkListenAddr(key, v.String())
	case "dialList":
		if v.Len() == 0 {
			return invalid(key, "must list at least one name server")
		}
		for i := range v.Len() {
			if err := checkDialAddr(key, v.Index(i).String()); err != nil {
				return err
			}
		}
		return nil
	case "name":
		return checkName(key, v.String())
	case "notEmpty":
		if v.String() == "" {
			return invalid(key, "must not be empty")
		}
		return nil
	case "positive":
		if d, ok := v.Interface().(time.Duration); ok {
			return checkPositiveDuration(key, d)
		}
		return checkPositive(key, v.Int())
	case "notNegative":
		if v.Int() < 0 {
			return invalid(key, "must not be negative, got %d", v.Int())
		}
		return nil
	case "percent":
		return checkPercent(key, int(v.Int()))
	case "range":
		var lo, hi int64
		if _, err := fmt.Sscanf(arg, "%d..%d", &lo, &hi); err != nil {
			panic(fmt.Sprintf("conf: %s: bad range %q", key, arg))
		}
		if n := v.Int(); n < lo || n > hi {
			return invalid(key, "must be from %d to %d, got %d", lo, hi, n)
		}
		return nil
	case "frameSize":
		return checkFrameSize(key, v.Int())
	case "oneOf", "oneOfFold":
		names := strings.Split(arg, "|")
		for _, n := range names {
			if n == v.String() || name == "oneOfFold" && strings.EqualFold(n, v.String()) {
				return nil
			}
		}
		return invalid(key, "must be %s or %s, got %q", strings.Join(names[:len(names)-1], ", "), names[len(names)-1], v.String())
	case "logLevel":
		return checkLogLevel(key, v.String(), arg == "inherit")
	case "deleteWhen":
		if _, err := ParseDeleteWhen(v.String()); err != nil {
			return invalid(key, "%v (got %q)", err, v.String())
		}
		return nil
	case "delayLevels":
		if _, err := ParseDelayLevels(v.String()); err != nil {
			return invalid(key, "%v (got %q)", err, v.String())
		}
		return nil
	}
	panic(fmt.Sprintf("conf: %s: unknown check %q", key, check))
}
