package launch

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/store"
)

// convertedBrokerKeys lists the keys whose value is not copied as is onto the Options
// field of their row (conf.Key.Option) but converted by hand in BrokerOptions: a name
// mapped onto an enumeration, a percentage onto a fraction, files onto a loaded TLS or ACL
// setup, an empty value resolved from other keys. Every other key with an Options field is
// copied by copyKeys, so a new plain setting needs no code here.
func convertedBrokerKeys() map[string]bool {
	return map[string]bool{
		"broker.brokerRole": true, "broker.advertisedAddr": true, "broker.haListen": true,
		"broker.haSlaveTimeout": true, "broker.flushDiskType": true, "broker.deleteWhen": true,
		"broker.diskMaxUsedRatio": true, "broker.diskForceCleanRatio": true, "broker.diskFullRatio": true,
		"broker.delayLevels": true, "broker.aclEnable": true, "broker.aclFile": true,
		"broker.tlsMode": true, "broker.tlsCertFile": true, "broker.tlsKeyFile": true,
		"broker.tlsClientCaFile": true, "broker.tlsRequireClientCert": true, "broker.tlsToNamesrv": true,
	}
}

// convertedNameServerKeys is convertedBrokerKeys for the name server.
func convertedNameServerKeys() map[string]bool {
	return map[string]bool{
		"namesrv.aclEnable": true, "namesrv.aclFile": true,
		"namesrv.tlsMode": true, "namesrv.tlsCertFile": true, "namesrv.tlsKeyFile": true,
		"namesrv.tlsClientCaFile": true, "namesrv.tlsRequireClientCert": true,
	}
}

// copyKeys sets, for every key of section in cfg that has an Options field and is not in
// converted, that field of opts (a pointer to the server's Options) to the key's value.
// Values are copied within a kind (string, bool, integer, slice): durations stay
// durations, an int64 byte size becomes an int where the field is one.
func copyKeys(cfg *conf.Config, section string, opts any, converted map[string]bool) error {
	root := reflect.ValueOf(opts).Elem()
	for _, k := range conf.KeyTable() {
		if k.Section() != section || k.Option == "" || converted[k.Name] {
			continue
		}
		dst, err := optionField(root, k.Option)
		if err != nil {
			return fmt.Errorf("launch: %s: %w", k.Name, err)
		}
		if err := assign(dst, k.In(cfg)); err != nil {
			return fmt.Errorf("launch: %s onto %s: %w", k.Name, k.Option, err)
		}
	}
	return nil
}

// optionField is the field at a dotted path ("Store.FlushInterval") in the struct v.
func optionField(v reflect.Value, path string) (reflect.Value, error) {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("no field %s: %s is not a struct", path, v.Type())
		}
		f := v.FieldByName(name)
		if !f.IsValid() {
			return reflect.Value{}, fmt.Errorf("%s has no field %s", v.Type(), name)
		}
		v = f
	}
	return v, nil
}

// assign sets dst to src when both are of one kind family.
func assign(dst, src reflect.Value) error {
	ok := false
	switch {
	case isInt(src.Kind()) && isInt(dst.Kind()), src.Kind() == reflect.String && dst.Kind() == reflect.String,
		src.Kind() == reflect.Bool && dst.Kind() == reflect.Bool:
		ok = src.Type().ConvertibleTo(dst.Type())
	case src.Kind() == reflect.Slice:
		ok = src.Type().AssignableTo(dst.Type())
	}
	if !ok {
		return fmt.Errorf("cannot set a %s from a %s", dst.Type(), src.Type())
	}
	dst.Set(src.Convert(dst.Type()))
	return nil
}

func isInt(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Int64 }

// brokerProperties is broker.Options.ConfigProperties: GET_BROKER_CONFIG's properties, for
// every broker key with a RocketMQ property (conf.Key.Property), read from the Options field
// the key sets, as the broker runs with it; and two values no key sets directly, the
// registered HA address (updated by the broker once it listens) and the byte limit
// accessMessageInMemoryMaxRatio gave.
func brokerProperties(o *broker.Options) map[string]string {
	props := map[string]string{
		"haServerAddr":                       o.HAAddr,
		"ferryAccessMessageInMemoryMaxBytes": strconv.FormatInt(o.Store.InMemoryMaxBytes, 10),
	}
	root := reflect.ValueOf(o).Elem()
	for _, k := range conf.KeyTable() {
		if k.Section() != "broker" || k.Property == "" {
			continue
		}
		v, err := propertyField(root, k.Option)
		if err != nil {
			continue // TestEveryKeyHasOneOptionsField
		}
		props[k.Property] = formatProperty(v, k.PropertyFormat)
	}
	return props
}

// propertyField is optionField through pointers, a nil one reading as its zero value (a
// nil TLS setup has mode disabled).
func propertyField(v reflect.Value, path string) (reflect.Value, error) {
	for _, name := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.Zero(v.Type().Elem())
			} else {
				v = v.Elem()
			}
		}
		f, err := optionField(v, name)
		if err != nil {
			return reflect.Value{}, err
		}
		v = f
	}
	return v, nil
}

// formatProperty writes an Options value as RocketMQ writes the property: durations in
// milliseconds (or whole hours), fractions as whole percentages, lists joined by ';',
// delay levels by ' ', a flush mode as ASYNC_FLUSH or SYNC_FLUSH, an interface (the ACL
// checker) as whether it is set, names by their String method.
func formatProperty(v reflect.Value, format conf.PropertyFormat) string {
	if v.Kind() == reflect.Interface {
		return strconv.FormatBool(!v.IsNil())
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		if format == conf.PropertyHours {
			return strconv.FormatInt(int64(x.Hours()), 10)
		}
		return strconv.FormatInt(x.Milliseconds(), 10)
	case float64:
		return strconv.FormatInt(int64(x*100), 10)
	case []string:
		return strings.Join(x, ";")
	case []time.Duration:
		levels := make([]string, len(x))
		for i, d := range x {
			levels[i] = d.String()
		}
		return strings.Join(levels, " ")
	case store.FlushMode:
		if x == store.FlushSync {
			return string(conf.SyncFlush)
		}
		return string(conf.AsyncFlush)
	case fmt.Stringer:
		return x.String()
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		if format == conf.PropertyUnitBytes {
			n *= 20
		}
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprint(v.Interface())
}
