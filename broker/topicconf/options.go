package topicconf

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/internal/mmap"
)

// MaxQueueNums is the largest read or write queue count a topic may have.
const MaxQueueNums = 1024

// Errors returned by this package. Each is wrapped with details; test with
// errors.Is.
var (
	// ErrInvalidOptions is wrapped by Options.Validate and Open.
	ErrInvalidOptions = errors.New("topicconf: invalid options")
	// ErrInvalidConfig reports a topic config that breaks the rules (name,
	// queue counts, permission bits, filter type).
	ErrInvalidConfig = errors.New("topicconf: invalid topic config")
	// ErrSystemTopic reports an attempt to change or delete a system or
	// built-in topic.
	ErrSystemTopic = errors.New("topicconf: system topic")
	// ErrTemplateNotFound reports an auto-creation whose template topic does
	// not exist (or auto-creation through TBW102 is disabled).
	ErrTemplateNotFound = errors.New("topicconf: template topic not found")
	// ErrTemplateNotInheritable reports an auto-creation whose template topic
	// lacks the inherit permission.
	ErrTemplateNotInheritable = errors.New("topicconf: template topic is not inheritable")
	// ErrCorrupt reports that neither topics.json nor its .bak copy could be
	// decoded.
	ErrCorrupt = errors.New("topicconf: corrupt topics file")
)

// Options configures a Manager.
type Options struct {
	// Dir is the store root; the table is kept in Dir/config/topics.json.
	Dir string
	// FS is the file system (mmap.OSFS{} in production, a MemFS in tests).
	FS mmap.FS
	// Logger receives load warnings.
	Logger zerolog.Logger
	// Now is the clock used for data version timestamps.
	Now func() time.Time
	// AutoCreateTopicEnable creates the template topic TBW102 (perm RW+inherit)
	// so producers can auto-create topics. When false, TBW102 is removed from
	// the table and auto-creation through it fails. RocketMQ default: true.
	AutoCreateTopicEnable bool
	// DefaultTopicQueueNums is the queue count of TBW102, which caps the
	// queue count of auto-created topics (RocketMQ defaultTopicQueueNums, 8).
	DefaultTopicQueueNums int
	// ScheduleTopicQueueNums is the queue count of SCHEDULE_TOPIC_XXXX: one
	// queue per delay level (18 by default).
	ScheduleTopicQueueNums int
	// TraceTopicEnable creates the trace topic TraceTopicName (1 queue) at
	// start (RocketMQ traceTopicEnable, default false).
	TraceTopicEnable bool
	// TraceTopicName is the trace topic (RocketMQ msgTraceTopicName); empty
	// means RMQ_SYS_TRACE_TOPIC. A name that is not a valid topic name is
	// skipped with a warning.
	TraceTopicName string
	// ClusterName, when set, creates the cluster-name topic (16 queues, perm
	// RW+inherit) and "<ClusterName>_REPLY_TOPIC" (1 queue), like RocketMQ.
	// A name that is not a valid topic name is skipped with a warning.
	ClusterName string
	// BrokerName, when set, creates the broker-name topic (1 queue, perm
	// RW+inherit), like RocketMQ. A name that is not a valid topic name is
	// skipped with a warning.
	BrokerName string
	// OnChange, if set, is called after every change has been written (outside
	// the manager's lock, possibly from several goroutines at once, on the
	// goroutine that made the change — for auto-creation a send request); the
	// broker uses it to trigger re-registration with the name servers, so it
	// should only signal and not block.
	OnChange func()
}

// DefaultOptions returns the RocketMQ defaults on the real file system. Dir
// must still be set.
func DefaultOptions() Options {
	return Options{
		FS:                     mmap.OSFS{},
		Logger:                 logging.Nop(),
		Now:                    time.Now,
		AutoCreateTopicEnable:  true,
		DefaultTopicQueueNums:  8,
		ScheduleTopicQueueNums: 18,
	}
}

// Validate reports the first problem with o; the error wraps
// ErrInvalidOptions.
func (o *Options) Validate() error {
	if err := metafile.CheckLocation(o.Dir, o.FS, ErrInvalidOptions); err != nil {
		return err
	}
	switch {
	case o.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidOptions)
	case o.DefaultTopicQueueNums < 1 || o.DefaultTopicQueueNums > MaxQueueNums:
		return fmt.Errorf("%w: DefaultTopicQueueNums %d outside 1..%d",
			ErrInvalidOptions, o.DefaultTopicQueueNums, MaxQueueNums)
	case o.ScheduleTopicQueueNums < 1 || o.ScheduleTopicQueueNums > MaxQueueNums:
		return fmt.Errorf("%w: ScheduleTopicQueueNums %d outside 1..%d",
			ErrInvalidOptions, o.ScheduleTopicQueueNums, MaxQueueNums)
	}
	return nil
}
