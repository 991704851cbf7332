package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every row of the key table is complete: a default (possibly empty, but written), a
// meaning, exactly one of an Options field or the process that applies the key, and a
// known property format; property names are unique.
func TestKeyTableRowsAreComplete(t *testing.T) {
	props := map[string]string{}
	for _, s := range settingsOf(typeOfConfig()) {
		k := keyOf(s)
		_, ok := s.tag.Lookup("default")
		require.True(t, ok, "%s has no default tag", k.Name)
		require.NotEmpty(t, k.Meaning, k.Name)
		require.True(t, (k.Option == "") != (k.Process == ""), "%s: want exactly one of option and process, got %q and %q", k.Name, k.Option, k.Process)
		if k.Process != "" {
			require.Contains(t, []string{ProcessCommand, ProcessFailover}, k.Process, k.Name)
			require.Empty(t, k.Property, "%s: a property is read from an Options field", k.Name)
		}
		require.Contains(t, []PropertyFormat{"", PropertyHours, PropertyUnitBytes}, k.PropertyFormat, k.Name)
		if k.PropertyFormat != "" {
			require.NotEmpty(t, k.Property, "%s has a property format but no property", k.Name)
		}
		if k.Property != "" {
			require.Equal(t, "broker", k.Section(), "%s: only broker keys have GET_BROKER_CONFIG properties", k.Name)
			require.NotContains(t, props, k.Property, "%s and %s share a property", props[k.Property], k.Name)
			props[k.Property] = k.Name
		}
	}
	require.Equal(t, Keys(), func() []string {
		var names []string
		for _, k := range KeyTable() {
			names = append(names, k.Name)
		}
		return names
	}())
}

// The defaults come from the table's default tags; they are the values the rest of Ferry
// was written against.
func TestTableDefaults(t *testing.T) {
	b := DefaultBrokerConfig()
	require.Equal(t, DefaultDelayLevels, b.DelayLevels)
	require.Equal(t, WorkerPools{Send: 16, Pull: 16, Query: 8, Admin: 8, Transaction: 8}, b.Workers)
	require.Equal(t, "RMQ_SYS_TRACE_TOPIC", b.MsgTraceTopicName)
	require.True(t, b.TraceTopicEnable)
	require.Equal(t, 256*MiB, b.HASlaveFallbehindMax)
	require.Equal(t, "disabled", b.TLSMode)
	require.Equal(t, LogConfig{Level: "info", Format: "auto"}, DefaultLogConfig())
	require.Equal(t, "disabled", DefaultNameServerConfig().TLSMode)
	require.Panics(t, func() { defaultsOf[badDefault]() })
}

type badDefault struct {
	N int `mapstructure:"n" default:"many"`
}
