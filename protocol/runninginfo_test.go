package protocol

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// goClientRunningInfo is what the official Go client (internal/model.go
// ConsumerRunningInfo.Encode) writes: object keys in mqTable, a space before
// "jstack", the goroutine dump unescaped, "dropped" spelled the Go way.
const goClientRunningInfo = `{"properties":{"PROP_CONSUMEORDERLY":"false","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},` +
	`"statusTable":{"T":{"pullRT":1.5,"pullTPS":2,"consumeRT":0,"consumeOKTPS":3,"consumeFailedTPS":0,"consumeFailedMsgs":1}},` +
	`"subscriptionSet":[{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":7,"expressionType":"TAG"}],` +
	`"mqTable":{{"topic":"T","brokerName":"broker-a","queueId":0}:{"commitOffset":7,"cachedMsgMinOffset":8,"cachedMsgMaxOffset":9,` +
	`"cachedMsgCount":2,"cachedMsgSizeInMiB":0,"transactionMsgMinOffset":0,"transactionMsgMaxOffset":0,"transactionMsgCount":0,` +
	`"locked":true,"tryUnlockTimes":0,"lastLockTimestamp":5,"dropped":true,"lastPullTimestamp":6,"lastConsumeTimestamp":4}}, ` +
	`"jstack":"goroutine 1 [running]:
main.main()
	"quoted" \path\ }" }`

func TestConsumerRunningInfoGoClient(t *testing.T) {
	got, err := DecodeConsumerRunningInfo([]byte(goClientRunningInfo))
	require.NoError(t, err)
	want := &ConsumerRunningInfo{
		Properties:      map[string]string{PropConsumeOrderly: "false", PropConsumeType: "CONSUME_PASSIVELY"},
		SubscriptionSet: []SubscriptionData{{Topic: "T", SubString: "*", SubVersion: 7, ExpressionType: ExpressionTag}},
		MQTable: map[MessageQueue]ProcessQueueInfo{mqA0: {CommitOffset: 7, CachedMsgMinOffset: 8, CachedMsgMaxOffset: 9,
			CachedMsgCount: 2, Locked: true, LastLockTimestamp: 5, Dropped: true, LastPullTimestamp: 6, LastConsumeTimestamp: 4}},
		StatusTable: map[string]ConsumeStatus{"T": {PullRT: 1.5, PullTPS: 2, ConsumeOKTPS: 3, ConsumeFailedMsgs: 1}},
		Jstack:      "goroutine 1 [running]:\nmain.main()\n\t\"quoted\" \\path\\ }",
	}
	require.Equal(t, want, got)

	// Re-encoded: valid, Java's field names and order, and the same value again.
	enc, err := EncodeConsumerRunningInfo(got)
	require.NoError(t, err)
	require.Contains(t, string(enc), `"droped":true`)
	require.Contains(t, string(enc), `{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"commitOffset":7,`)
	again, err := DecodeConsumerRunningInfo(enc)
	require.NoError(t, err)
	require.Equal(t, want, again)

	// Without a dump (jstackEnable false) the Go client's body is decodable as is.
	got, err = DecodeConsumerRunningInfo([]byte(`{"properties":{},"statusTable":{},"subscriptionSet":[],"mqTable":{}, "jstack":"" }`))
	require.NoError(t, err)
	require.Equal(t, &ConsumerRunningInfo{}, got)
}

func TestConsumerRunningInfoJava(t *testing.T) {
	body := `{"jstack":"","mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"cachedMsgCount":3,"droped":false,"locked":false}},` +
		`"properties":{"consumerGroup":"cg","PROP_CONSUMER_START_TIMESTAMP":"1700000000000"},"statusTable":{},` +
		`"subscriptionSet":[{"classFilterMode":false,"codeSet":[2598919],"subString":"TagA","subVersion":1,"tagsSet":["TagA"],"topic":"T"}]}`
	got, err := DecodeConsumerRunningInfo([]byte(body))
	require.NoError(t, err)
	require.Equal(t, "cg", got.Properties["consumerGroup"])
	require.Equal(t, int32(3), got.MQTable[mqA0].CachedMsgCount)
	require.Equal(t, CodeSet{2598919}, got.SubscriptionSet[0].CodeSet)
	require.Nil(t, got.StatusTable)

	enc, err := EncodeConsumerRunningInfo(&ConsumerRunningInfo{})
	require.NoError(t, err)
	require.Equal(t, `{"jstack":"","mqTable":{},"properties":{},"statusTable":{},"subscriptionSet":[]}`, string(enc))

	_, err = EncodeConsumerRunningInfo(&ConsumerRunningInfo{StatusTable: map[string]ConsumeStatus{"T": {PullTPS: math.Inf(1)}}})
	require.ErrorIs(t, err, ErrBadBody)
	for _, bad := range []string{``, `[]`, `{"mqTable":{{"queueId":"x"}:{}}}`, `{"properties":[]}`,
		`{"jstack":"a` + "\n" + `"`, `{"mqTable":5, "jstack":"x" }`} {
		_, err := DecodeConsumerRunningInfo([]byte(bad))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
}
