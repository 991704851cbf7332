package protocol

import (
	"fmt"
	"strings"
)

// Well-known topic and group names (spec §4).
const (
	// AutoCreateTopicKey (TBW102) is the template topic for auto-creation;
	// producers send it as defaultTopic. It normally has perm 7 (RW+inherit).
	AutoCreateTopicKey = "TBW102"
	// RetryTopicPrefix starts the retry topic of a consumer group.
	RetryTopicPrefix = "%RETRY%"
	// DLQTopicPrefix starts the dead-letter topic of a consumer group.
	DLQTopicPrefix = "%DLQ%"
	// TransHalfTopic holds prepared (half) transactional messages.
	TransHalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TransOpHalfTopic holds the op records that resolve half messages.
	TransOpHalfTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TransCheckMaxTimeTopic receives half messages that exceeded the check limit.
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// ScheduleTopic parks delayed messages; queue id = delay level − 1.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// ScheduleTopicV2 is the 5.x variant of ScheduleTopic (system, never sent to).
	ScheduleTopicV2 = "SCHEDULE_TOPIC_XXXX_V2"
	// TimerTopic parks 5.x timer (arbitrary delay) messages.
	TimerTopic = "rmq_sys_wheel_timer"
	// TraceTopic receives message-trace records (plain sends from clients).
	TraceTopic = "RMQ_SYS_TRACE_TOPIC"
	// BenchmarkTopic is the Java benchmark topic, reserved as a system topic.
	BenchmarkTopic = "BenchmarkTest"
	// SelfTestTopic is reserved by Java brokers.
	SelfTestTopic = "SELF_TEST_TOPIC"
	// OffsetMovedEventTopic is reserved by Java brokers.
	OffsetMovedEventTopic = "OFFSET_MOVED_EVENT"
	// SystemTopicPrefix marks every topic name reserved for the system.
	SystemTopicPrefix = "rmq_sys_"
	// CompactionCopyTopic holds the store's copies of compacted topics' live records
	// (store.CompactionCopyTopic, the same name); clients never send to it.
	CompactionCopyTopic = "rmq_sys_ferry_compaction_copy"

	// DefaultProducerGroup is the Go client's default producer group.
	DefaultProducerGroup = "DEFAULT_PRODUCER"
	// ClientInnerProducerGroup is used by clients for retry fallback sends.
	ClientInnerProducerGroup = "CLIENT_INNER_PRODUCER"
)

// Name length limits (spec §1.7).
const (
	// MaxTopicLength is the longest ordinary topic name. It is also the
	// longest topic a V1 message record (1-byte topic length) can carry.
	MaxTopicLength = 127
	// MaxRetryTopicLength is the longest %RETRY% or %DLQ% topic name Java
	// accepts. Names above MaxTopicLength need V2 records, which the Go
	// client cannot read.
	MaxRetryTopicLength = 255
	// MaxGroupLength is the longest group name.
	MaxGroupLength = 255
)

// Permission bits of a topic or broker (QueueData.perm, TopicConfig.perm).
const (
	PermInherit  int32 = 0x1 // template topic: new topics may inherit its config
	PermWrite    int32 = 0x2 // producers may send
	PermRead     int32 = 0x4 // consumers may pull
	PermPriority int32 = 0x8 // priority flag (unused by clients)
)

// PermReadable reports whether perm has the READ bit.
func PermReadable(perm int32) bool { return perm&PermRead != 0 }

// PermWriteable reports whether perm has the WRITE bit.
func PermWriteable(perm int32) bool { return perm&PermWrite != 0 }

// PermInheritable reports whether perm has the INHERIT bit.
func PermInheritable(perm int32) bool { return perm&PermInherit != 0 }

// Topic system flags (topicSysFlag).
const (
	TopicSysFlagUnit    int32 = 0x1 // unit topic
	TopicSysFlagUnitSub int32 = 0x2 // unit subscription
)

// Pull request sysFlag bits (PullMessageRequestHeader.SysFlag, spec §7.1).
const (
	PullFlagCommitOffset int32 = 0x1  // store commitOffset as the group's offset
	PullFlagSuspend      int32 = 0x2  // the broker may hold (long-poll) the request
	PullFlagSubscription int32 = 0x4  // the request carries its own subscription
	PullFlagClassFilter  int32 = 0x8  // class filter mode (obsolete)
	PullFlagLitePull     int32 = 0x10 // sent by a Java lite-pull consumer
)

// RetryTopic returns the retry topic of a consumer group ("%RETRY%<group>").
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic returns the dead-letter topic of a consumer group ("%DLQ%<group>").
func DLQTopic(group string) string { return DLQTopicPrefix + group }

// IsRetryTopic reports whether topic is a %RETRY% topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, RetryTopicPrefix) }

// IsDLQTopic reports whether topic is a %DLQ% topic.
func IsDLQTopic(topic string) bool { return strings.HasPrefix(topic, DLQTopicPrefix) }

// RetryGroup returns the consumer group of a %RETRY% topic.
func RetryGroup(topic string) (group string, ok bool) {
	return strings.CutPrefix(topic, RetryTopicPrefix)
}

// IsSystemTopic reports whether name is reserved for the system, like Java's
// TopicValidator.isSystemTopic: the fixed system topics (including TBW102 and
// the trace topic) and every name starting with "rmq_sys_". Retry and DLQ
// topics are not system topics.
func IsSystemTopic(name string) bool {
	switch name {
	case AutoCreateTopicKey, ScheduleTopic, ScheduleTopicV2, BenchmarkTopic,
		TransHalfTopic, TraceTopic, TransOpHalfTopic, TransCheckMaxTimeTopic,
		SelfTestTopic, OffsetMovedEventTopic:
		return true
	}
	return strings.HasPrefix(name, SystemTopicPrefix)
}

// IsSendForbiddenTopic reports whether clients must not send to topic (Java
// TopicValidator.isNotAllowedSendTopic): the broker answers NoPermission.
func IsSendForbiddenTopic(topic string) bool {
	switch topic {
	case ScheduleTopic, ScheduleTopicV2, TransHalfTopic, TransOpHalfTopic,
		TransCheckMaxTimeTopic, SelfTestTopic, OffsetMovedEventTopic, CompactionCopyTopic:
		return true
	}
	return false
}

// NameProblem says what is wrong with a rejected name.
type NameProblem int

// Name problems reported by [NameError].
const (
	NameEmpty   NameProblem = iota + 1 // the name is empty
	NameTooLong                        // the name exceeds its length limit
	NameBadChar                        // the name has a character outside [%|a-zA-Z0-9_-]
)

// String returns a short description of the problem.
func (p NameProblem) String() string {
	switch p {
	case NameEmpty:
		return "empty"
	case NameTooLong:
		return "too long"
	case NameBadChar:
		return "bad character"
	}
	return fmt.Sprintf("NameProblem(%d)", int(p))
}

// NameError describes a rejected topic or group name. It wraps
// [ErrInvalidName].
type NameError struct {
	Kind    string      // "topic" or "group"
	Name    string      // the rejected name
	Problem NameProblem // what is wrong
	Limit   int         // the length limit (NameTooLong)
	Offset  int         // byte offset of the bad character (NameBadChar)
}

// Error implements error.
func (e *NameError) Error() string {
	switch e.Problem {
	case NameEmpty:
		return fmt.Sprintf("%v: %s name is empty", ErrInvalidName, e.Kind)
	case NameTooLong:
		return fmt.Sprintf("%v: %s name %q is too long: %d characters, limit %d",
			ErrInvalidName, e.Kind, truncate(e.Name, 40), len(e.Name), e.Limit)
	case NameBadChar:
		if e.Offset < 0 || e.Offset >= len(e.Name) {
			break
		}
		return fmt.Sprintf("%v: %s name %q has bad character %q at offset %d (allowed: %%|a-zA-Z0-9_-)",
			ErrInvalidName, e.Kind, truncate(e.Name, 40), e.Name[e.Offset], e.Offset)
	}
	return fmt.Sprintf("%v: %s name %q: %v", ErrInvalidName, e.Kind, truncate(e.Name, 40), e.Problem)
}

// Unwrap returns [ErrInvalidName].
func (e *NameError) Unwrap() error { return ErrInvalidName }

// ValidateTopic checks a topic name against the rules of spec §1.7: not
// empty, only characters from [%|a-zA-Z0-9_-], and at most MaxTopicLength
// characters (MaxRetryTopicLength for %RETRY% and %DLQ% topics). The error is
// a [*NameError] wrapping [ErrInvalidName]. System names pass; use
// [IsSystemTopic] to refuse them where needed.
func ValidateTopic(name string) error {
	limit := MaxTopicLength
	if IsRetryTopic(name) || IsDLQTopic(name) {
		limit = MaxRetryTopicLength
	}
	return validateName("topic", name, limit)
}

// ValidateGroup checks a producer or consumer group name: not empty, only
// characters from [%|a-zA-Z0-9_-], at most MaxGroupLength characters. The
// error is a [*NameError] wrapping [ErrInvalidName].
func ValidateGroup(name string) error {
	return validateName("group", name, MaxGroupLength)
}

func validateName(kind, name string, limit int) error {
	if name == "" {
		return &NameError{Kind: kind, Name: name, Problem: NameEmpty}
	}
	for i := 0; i < len(name); i++ {
		if !validNameChar(name[i]) {
			return &NameError{Kind: kind, Name: name, Problem: NameBadChar, Offset: i}
		}
	}
	if len(name) > limit {
		return &NameError{Kind: kind, Name: name, Problem: NameTooLong, Limit: limit}
	}
	return nil
}

func validNameChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '%', c == '|', c == '_', c == '-':
		return true
	}
	return false
}
