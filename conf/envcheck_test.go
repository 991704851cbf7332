package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnknownEnvVarsAreFoundWithASuggestion(t *testing.T) {
	got := UnknownEnvVars([]string{
		"PATH=/bin",
		"FERRY_BROKER_LISTEN=127.0.0.1:1",  // known
		"FERRY_CONFIG=x.yaml",              // known
		"FERRY_BROKER_LISTN=127.0.0.1:2",   // a typo
		"FERRY_FLUSH_DISK_TYPE=SYNC_FLUSH", // a missing section
		"FERRY_SOMETHING_ELSE_ENTIRELY=1",
	})
	require.Equal(t, []UnknownEnvVar{
		{Name: "FERRY_BROKER_LISTN", Suggestion: "FERRY_BROKER_LISTEN"},
		{Name: "FERRY_FLUSH_DISK_TYPE", Suggestion: "FERRY_BROKER_FLUSH_DISK_TYPE"},
		{Name: "FERRY_SOMETHING_ELSE_ENTIRELY"},
	}, got)
	require.Empty(t, UnknownEnvVars(nil))
}
