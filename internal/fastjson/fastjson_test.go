package fastjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cases of the three quoters this package replaces (protocol, the consumer-offset
// file, the delay-level progress file), kept whole.
func TestQuoteBareKeys(t *testing.T) {
	for in, want := range map[string]string{
		// protocol (wire bodies)
		`{0:"a"}`:                     `{"0":"a"}`,
		`{0:"a",-12:"b"}`:             `{"0":"a","-12":"b"}`,
		`{ 0 : "a" ,	1:"b"}`:          `{ "0" : "a" ,	"1":"b"}`,
		`{"m":{1:{2:"x"}},"n":[1,2]}`: `{"m":{"1":{"2":"x"}},"n":[1,2]}`,
		`[{3:4},5,{6:[7,{8:9}]}]`:     `[{"3":4},5,{"6":[7,{"8":9}]}]`,
		`{"k":"{0:1}","j":"a\"{0:"}`:  `{"k":"{0:1}","j":"a\"{0:"}`,
		`{"a":1,"b":{}}`:              `{"a":1,"b":{}}`,
		`{"a\\":{7:"x"}}`:             `{"a\\":{"7":"x"}}`,
		// schedule (delayOffset.json)
		`{1:2}`:                       `{"1":2}`,
		`{"a":{-1:2,3:[4,{5:6}]}}`:    `{"a":{"-1":2,"3":[4,{"5":6}]}}`,
		`{"k\"1":2}`:                  `{"k\"1":2}`,
		`[1,2,{3:4}]`:                 `[1,2,{"3":4}]`,
		`{"s":"{1:2}", 7 :8}`:         `{"s":"{1:2}", "7" :8}`,
		`{"offsetTable":{}}`:          `{"offsetTable":{}}`,
		`{1:{2:{3:4}}}`:               `{"1":{"2":{"3":4}}}`,
		`unbalanced}}]] {9:`:          `unbalanced}}]] {"9":`,
		`{"unterminated string \\\"}`: `{"unterminated string \\\"}`,
	} {
		require.Equal(t, want, string(QuoteBareKeys([]byte(in))), in)
	}
	// broker/offsets (consumerOffset.json)
	cases := []struct{ in, want string }{
		{`{}`, `{}`},
		{`{0:1}`, `{"0":1}`},
		{`{"t@g":{0:250,1:249,12:0}}`, `{"t@g":{"0":250,"1":249,"12":0}}`},
		{`{-1:5, 7 :6}`, `{"-1":5, "7" :6}`},
		{"{\n\t\"a\":{0:0\n\t\t}\n}", "{\n\t\"a\":{\"0\":0\n\t\t}\n}"},
		{`{"0":1}`, `{"0":1}`},
		{`[0,1,{2:3}]`, `[0,1,{"2":3}]`},
		{`{"a":[1,2],3:4}`, `{"a":[1,2],"3":4}`},
		{`{"s":"{0:1}","k\"{1:2":3}`, `{"s":"{0:1}","k\"{1:2":3}`},
		{`{"a":1}}}]]{5:`, `{"a":1}}}]]{"5":`},
		{`"unterminated {0:1`, `"unterminated {0:1`},
		{`{"x":"\\"}`, `{"x":"\\"}`},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(QuoteBareKeys([]byte(tc.in))), tc.in)
	}
	same := []byte(`{"0":"a"}`)
	require.Equal(t, &same[0], &QuoteBareKeys(same)[0], "unchanged input is returned as is")
	// Malformed input is passed through without panicking.
	for _, in := range []string{`{"`, `{"\`, `}}}]]`, `{-`, `{0`, `{"a":"\"}`} {
		require.NotPanics(t, func() { QuoteBareKeys([]byte(in)) })
	}
}

func TestQuoteObjectKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:                     `{"a":1}`,
		`{{"q":0}:1}`:                 `{"{\"q\":0}":1}`,
		`{"x":{{"a":"}"}:[{"b":2}]}}`: `{"x":{"{\"a\":\"}\"}":[{"b":2}]}}`,
		`[{"k":{}}]`:                  `[{"k":{}}]`,
		`{{"q":0}`:                    `{"{\"q\":0}"`,
		`{{"q":0`:                     `{{"q":0`,
		`{ {"q":{"n":1}} :1,{}:2}`:    `{ "{\"q\":{\"n\":1}}" :1,"{}":2}`,
	} {
		require.Equal(t, want, string(QuoteObjectKeys([]byte(in))), in)
	}
	in := []byte(`{"a":[1,2]}`)
	require.Same(t, &in[0], &QuoteObjectKeys(in)[0], "unchanged input is returned as is")
}

// FuzzQuoteBareKeys checks the bare-key pre-pass never panics, is idempotent, and leaves
// valid JSON alone.
func FuzzQuoteBareKeys(f *testing.F) {
	f.Add([]byte(`{0:"a",-1:{2:[3,{4:5}]},"s":"{6:7}"}`))
	f.Add([]byte(`{"a\"":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		once := QuoteBareKeys(data)
		require.Equal(t, string(once), string(QuoteBareKeys(once)))
		if json.Valid(data) {
			require.Equal(t, data, once)
		}
	})
}

// javaTopicStats is a MessageQueue-keyed map as fastjson writes it: object keys, fields
// sorted.
const javaTopicStats = `{"offsetTable":{{"brokerName":"broker-b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000001,"maxOffset":5,"minOffset":1},` +
	`{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}},"topicPutTps":1.5}`

// FuzzQuoteObjectKeys checks the object-key pre-pass never panics and is idempotent.
func FuzzQuoteObjectKeys(f *testing.F) {
	f.Add([]byte(javaTopicStats))
	f.Add([]byte(`{{"a":"}\"{"}:{{"b":1}:2},"s":"{{x}:1}",[{{}:[]}]}`))
	f.Add([]byte(`{{"q":0`))
	f.Fuzz(func(t *testing.T, data []byte) {
		once := QuoteObjectKeys(data)
		require.Equal(t, string(once), string(QuoteObjectKeys(once)))
	})
}
