package remoting

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// Fuzz invariants shared by every decoder in this package:
//   - no input panics;
//   - a failure is one of the package's typed errors;
//   - whatever decodes re-encodes (in the same serialize type) to a frame that decodes to
//     the same command: decode ∘ encode is the identity on decoded commands.

func checkDecodeErr(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrMalformedFrame) && !errors.Is(err, ErrUnknownSerializeType) {
		t.Fatalf("untyped decode error: %v", err)
	}
}

func checkRoundTrip(t *testing.T, c *Codec, cmd *Command) {
	t.Helper()
	frame, err := c.AppendFrame(nil, cmd)
	if err != nil {
		t.Fatalf("re-encoding a decoded command: %v", err)
	}
	back, err := c.DecodeFrame(frame[LengthFieldSize:])
	if err != nil {
		t.Fatalf("decoding a re-encoded command: %v", err)
	}
	if back.Code != cmd.Code || back.Language != cmd.Language || back.Version != cmd.Version ||
		back.Opaque != cmd.Opaque || back.Flag != cmd.Flag || back.Remark != cmd.Remark ||
		back.SerializeType != cmd.SerializeType || !bytes.Equal(back.Body, cmd.Body) ||
		len(back.ExtFields) != len(cmd.ExtFields) {
		t.Fatalf("round trip changed the command:\n got %v\nwant %v", back, cmd)
	}
	for k, v := range cmd.ExtFields.All() {
		if got, ok := back.ExtFields.Get(k); !ok || got != v {
			t.Fatalf("round trip changed ext %q: %q -> %q", k, v, got)
		}
	}
}

// seedFrames returns valid frames of every codec for the seed corpus.
func seedFrames(f *testing.F) [][]byte {
	var c Codec
	var out [][]byte
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ, SerializeMsgpack} {
		for _, cmd := range []*Command{sampleCommand(st), {Code: 105, SerializeType: st}, benchHeader(st)} {
			cmd.SerializeType = st
			frame, err := c.AppendFrame(nil, cmd)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, frame[LengthFieldSize:])
		}
	}
	return out
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range seedFrames(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var c Codec
		cmd, err := c.DecodeFrame(frame)
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		checkRoundTrip(t, &c, cmd)
	})
}

// fuzzHeader fuzzes one header codec with the header bytes alone.
func fuzzHeader(f *testing.F, st SerializeType) {
	for _, s := range seedFrames(f) {
		if SerializeType(s[0]) == st {
			hlen := int(s[1])<<16 | int(s[2])<<8 | int(s[3])
			f.Add(s[4 : 4+hlen])
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		var c Codec
		cmd, err := c.DecodeFrame(headerOnlyFrame(st, header))
		if err != nil {
			checkDecodeErr(t, err)
			return
		}
		checkRoundTrip(t, &c, cmd)
	})
}

func FuzzJSONHeader(f *testing.F) {
	f.Add([]byte(`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`))
	f.Add([]byte(`{"code":1,"remark":"a\"b\\c\/d\n\u00e9\ud83d\ude00","extFields":null,"x":[1,{"y":null}]}`))
	fuzzHeader(f, SerializeJSON)
}

func FuzzBinaryHeader(f *testing.F) { fuzzHeader(f, SerializeRocketMQ) }

func FuzzMsgpackHeader(f *testing.F) { fuzzHeader(f, SerializeMsgpack) }

// FuzzJSONStringsAsEncodingJSON: the strings the JSON header decoder returns — unescaped
// in place over the frame's bytes — equal what encoding/json (the official Go client's
// decoder) reads, whenever it accepts them. The fuzzer writes the raw contents of a
// remark, an ext key and two ext values (escapes, invalid UTF-8 and all).
func FuzzJSONStringsAsEncodingJSON(f *testing.F) {
	f.Add(`a\"b\\c\/d\n\u00e9\ud83d\ude00\u0041`, `k\u0001`, `v\u0002w`, "plain")
	f.Add("\xff\\u0001\xfe\\ud800x", "p", "\\u0001\\u0002\xc3", `\ud800\udc00\ud800`)
	f.Add("", "properties", `KEYS\u0001k1\u0002TAGS\u0001t\u0002UNIQ_KEY\u0001AC1\u0002`, `\t\r\b\f`)
	f.Fuzz(func(t *testing.T, remark, key, v1, v2 string) {
		header := `{"code":1,"remark":"` + remark + `","extFields":{"` + key + `":"` + v1 + `","z":"` + v2 + `"}}`
		var want struct {
			Remark    string            `json:"remark"`
			ExtFields map[string]string `json:"extFields"`
		}
		if json.Unmarshal([]byte(header), &want) != nil {
			return
		}
		var c Codec
		cmd, err := c.DecodeFrame(headerOnlyFrame(SerializeJSON, []byte(header)))
		if err != nil {
			t.Fatalf("encoding/json reads %q, the decoder fails: %v", header, err)
		}
		if cmd.Remark != want.Remark {
			t.Fatalf("remark %q, encoding/json %q", cmd.Remark, want.Remark)
		}
		got := cmd.ExtFields.Map()
		for k, v := range want.ExtFields {
			if got[k] != v {
				t.Fatalf("ext %q = %q, encoding/json %q", k, got[k], v)
			}
		}
		if len(got) != len(want.ExtFields) {
			t.Fatalf("ext fields %q, encoding/json %q", got, want.ExtFields)
		}
	})
}
