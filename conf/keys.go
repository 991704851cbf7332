package conf

import (
	"fmt"
	"reflect"
	"strings"

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
//	              ("command": the ferry command itself, e.g. its listener or logging)
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

// Section is the key's first part: "broker", "namesrv" or "log".
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
