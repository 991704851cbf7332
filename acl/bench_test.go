package acl

import (
	"net/netip"
	"testing"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
)

// goSendHeader is a SEND_MESSAGE header as the official Go client fills it.
func goSendHeader() []Field {
	return []Field{
		{Key: "producerGroup", Value: "please_rename_unique_group_name"}, {Key: "topic", Value: "topicB"},
		{Key: "defaultTopic", Value: "TBW102"}, {Key: "defaultTopicQueueNums", Value: "4"},
		{Key: "queueId", Value: "3"}, {Key: "sysFlag", Value: "0"}, {Key: "bornTimestamp", Value: "1700000000000"},
		{Key: "flag", Value: "0"}, {Key: "properties", Value: "TAGS\x01tagA\x02UNIQ_KEY\x01AC11000100002A9F0000000000000001\x02WAIT\x01true\x02"},
		{Key: "reconsumeTimes", Value: "0"}, {Key: "unitMode", Value: "false"}, {Key: "batch", Value: "false"},
		{Key: "bname", Value: "broker-a"},
	}
}

func benchCheck(b *testing.B, req Request) {
	a := testACL(b)
	if err := a.Check(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(req.Body)))
	b.ResetTimer()
	for b.Loop() {
		if err := a.Check(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck: a signed 1 KiB SEND_MESSAGE (13 header fields + AccessKey and
// Signature), the common case.
func BenchmarkCheck(b *testing.B) {
	body := make([]byte, 1024)
	benchCheck(b, Request{Addr: peer, Code: int16(protocol.SendMessage), Version: 317, Body: body,
		Fields: sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.SignFields(goSendHeader(), body)})
}

// BenchmarkCheckEmptyBody: the same without a body (pure header cost).
func BenchmarkCheckEmptyBody(b *testing.B) {
	benchCheck(b, Request{Addr: peer, Code: int16(protocol.SendMessage), Version: 317,
		Fields: sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.SignFields(goSendHeader(), nil)})
}

// BenchmarkCheckGlobalWhiteList: a white-listed peer (no HMAC).
func BenchmarkCheckGlobalWhiteList(b *testing.B) {
	benchCheck(b, Request{Addr: netip.MustParseAddr("10.10.103.4"), Code: int16(protocol.SendMessage), Fields: goSendHeader()})
}

// BenchmarkSign: the client side.
func BenchmarkSign(b *testing.B) {
	body := make([]byte, 1024)
	c := sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}
	h := goSendHeader()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.SignFields(h, body)
	}
}
