package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBrokerStatsDataJSON(t *testing.T) {
	d := &BrokerStatsData{StatsMinute: BrokerStatsItem{Sum: 120, TPS: 2, AvgPT: 1.5}, StatsHour: BrokerStatsItem{Sum: 7}}
	b, err := EncodeBrokerStatsData(d)
	require.NoError(t, err)
	require.JSONEq(t, `{"statsMinute":{"sum":120,"tps":2,"avgpt":1.5},"statsHour":{"sum":7,"tps":0,"avgpt":0},
		"statsDay":{"sum":0,"tps":0,"avgpt":0}}`, string(b))
	got, err := DecodeBrokerStatsData(b)
	require.NoError(t, err)
	require.Equal(t, d, got)
	// What a Java broker's fastjson writes: doubles with a fraction, fields in any order.
	got, err = DecodeBrokerStatsData([]byte(`{"statsDay":{"avgpt":0.0,"sum":3,"tps":0.0},"statsHour":{"avgpt":1.0,"sum":3,"tps":0.0},"statsMinute":{"avgpt":1.0,"sum":3,"tps":0.05}}`))
	require.NoError(t, err)
	require.InDelta(t, 0.05, got.StatsMinute.TPS, 1e-9)
	require.Equal(t, int64(3), got.StatsDay.Sum)
	_, err = DecodeBrokerStatsData([]byte(`[1]`))
	require.ErrorIs(t, err, ErrBadBody)
}
