package protocol

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateTopic(t *testing.T) {
	long := strings.Repeat("a", MaxTopicLength)
	for _, tc := range []struct {
		name    string
		problem NameProblem // 0 = valid
	}{
		{"TopicTest", 0},
		{"a", 0},
		{"ns%Topic|x_y-z09", 0},
		{long, 0},
		{long + "a", NameTooLong},
		{RetryTopic(strings.Repeat("g", 200)), 0},           // 207 ≤ 255
		{DLQTopic(strings.Repeat("g", 250)), 0},             // 255
		{RetryTopic(strings.Repeat("g", 249)), NameTooLong}, // 256
		{AutoCreateTopicKey, 0},                             // system names are valid names
		{"", NameEmpty},
		{"has space", NameBadChar},
		{"dot.topic", NameBadChar},
		{"slash/topic", NameBadChar},
		{"tab\t", NameBadChar},
		{"ümlaut", NameBadChar},
		{"quote\"", NameBadChar},
		{strings.Repeat("a", 200) + "!", NameBadChar}, // bad char wins over length
	} {
		err := ValidateTopic(tc.name)
		if tc.problem == 0 {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		require.ErrorIs(t, err, ErrInvalidName)
		var ne *NameError
		require.ErrorAs(t, err, &ne)
		require.Equal(t, tc.problem, ne.Problem, tc.name)
		require.Equal(t, "topic", ne.Kind)
		require.Contains(t, err.Error(), tc.problem.String())
	}
}

func TestValidateTopicMessages(t *testing.T) {
	require.EqualError(t, ValidateTopic(""), "protocol: invalid name: topic name is empty")
	require.EqualError(t, ValidateTopic("a b"),
		`protocol: invalid name: topic name "a b" has bad character ' ' at offset 1 (allowed: %|a-zA-Z0-9_-)`)
	err := ValidateTopic(strings.Repeat("x", 128))
	require.ErrorContains(t, err, "too long: 128 characters, limit 127")
	require.Less(t, len(err.Error()), 200, "long names are truncated in messages")
}

func TestValidateGroup(t *testing.T) {
	require.NoError(t, ValidateGroup("cg"))
	require.NoError(t, ValidateGroup(DefaultProducerGroup))
	require.NoError(t, ValidateGroup(strings.Repeat("g", MaxGroupLength)))
	for name, problem := range map[string]NameProblem{
		"":                                    NameEmpty,
		strings.Repeat("g", MaxGroupLength+1): NameTooLong,
		"g.1":                                 NameBadChar,
	} {
		err := ValidateGroup(name)
		require.True(t, errors.Is(err, ErrInvalidName))
		var ne *NameError
		require.ErrorAs(t, err, &ne)
		require.Equal(t, problem, ne.Problem)
		require.Equal(t, "group", ne.Kind)
	}
}

func TestNameErrorOddValues(t *testing.T) {
	// A hand-made NameError must not panic when printed.
	require.NotPanics(t, func() {
		_ = (&NameError{Kind: "topic", Problem: NameBadChar, Offset: 5}).Error()
		_ = (&NameError{Kind: "topic", Problem: 0}).Error()
	})
}

func TestRetryAndDLQTopics(t *testing.T) {
	require.Equal(t, "%RETRY%cg", RetryTopic("cg"))
	require.Equal(t, "%DLQ%cg", DLQTopic("cg"))
	require.True(t, IsRetryTopic("%RETRY%cg"))
	require.False(t, IsRetryTopic("%DLQ%cg"))
	require.True(t, IsDLQTopic("%DLQ%cg"))
	g, ok := RetryGroup("%RETRY%cg")
	require.True(t, ok)
	require.Equal(t, "cg", g)
	_, ok = RetryGroup("TopicTest")
	require.False(t, ok)
}

func TestSystemTopics(t *testing.T) {
	for _, name := range []string{
		"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
		"TRANS_CHECK_MAX_TIME_TOPIC", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_wheel_timer", "rmq_sys_anything",
		"BenchmarkTest", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX_V2",
	} {
		require.True(t, IsSystemTopic(name), name)
	}
	for _, name := range []string{"TopicTest", "%RETRY%cg", "%DLQ%cg", "RMQ_SYS", "tbw102"} {
		require.False(t, IsSystemTopic(name), name)
	}
	require.True(t, IsSendForbiddenTopic(TransHalfTopic))
	require.True(t, IsSendForbiddenTopic(ScheduleTopic))
	require.False(t, IsSendForbiddenTopic(TraceTopic), "the Go trace dispatcher sends to it")
	require.False(t, IsSendForbiddenTopic(AutoCreateTopicKey))
	require.Equal(t, "DEFAULT_PRODUCER", DefaultProducerGroup)
	require.Equal(t, "CLIENT_INNER_PRODUCER", ClientInnerProducerGroup)
}

func TestPerm(t *testing.T) {
	require.Equal(t, []int32{1, 2, 4, 8}, []int32{PermInherit, PermWrite, PermRead, PermPriority})
	require.True(t, PermReadable(6))
	require.True(t, PermWriteable(6))
	require.False(t, PermInheritable(6))
	require.True(t, PermInheritable(7))
	require.False(t, PermWriteable(4))
	require.False(t, PermReadable(2))
}
