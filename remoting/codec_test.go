package remoting

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sampleCommand is a request with every header field set.
func sampleCommand(st SerializeType) *Command {
	return &Command{
		Code:          310,
		Language:      LanguageJava,
		Version:       479,
		Opaque:        -12345,
		Flag:          FlagOneway,
		Remark:        "remark with \"quotes\", a \\ backslash, a\ttab and 中文",
		ExtFields:     ExtOf(map[string]string{"a": "pg", "b": "TopicTest", "e": "-1", "empty": "", "uni": "ü\x01"}),
		Body:          []byte("hello body"),
		SerializeType: st,
	}
}

// sameHeader checks that two commands carry the same header and body.
func sameHeader(t *testing.T, want, got *Command) {
	t.Helper()
	require.Equal(t, want.Code, got.Code)
	require.Equal(t, want.Language, got.Language)
	require.Equal(t, want.Version, got.Version)
	require.Equal(t, want.Opaque, got.Opaque)
	require.Equal(t, want.Flag, got.Flag)
	require.Equal(t, want.Remark, got.Remark)
	require.Equal(t, want.SerializeType, got.SerializeType)
	require.Equal(t, len(want.ExtFields), len(got.ExtFields))
	for k, v := range want.ExtFields.All() {
		require.Equal(t, v, got.ExtFields.Value(k), "ext %q", k)
	}
	require.Equal(t, string(want.Body)+joinVec(want.BodyVec), string(got.Body))
}

func joinVec(v [][]byte) string {
	var sb strings.Builder
	for _, p := range v {
		sb.Write(p)
	}
	return sb.String()
}

func TestFrameRoundTripEveryCodec(t *testing.T) {
	var c Codec
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ, SerializeMsgpack} {
		t.Run(st.String(), func(t *testing.T) {
			in := sampleCommand(st)
			in.BodyVec = [][]byte{[]byte(" part1"), []byte(" part2")}
			frame, err := c.AppendFrame(nil, in)
			require.NoError(t, err)
			n, err := ParseLength(frame, DefaultMaxFrameSize)
			require.NoError(t, err)
			require.Equal(t, len(frame)-LengthFieldSize, n)
			require.Equal(t, byte(st), frame[4], "serialize type byte")
			out, err := c.DecodeFrame(frame[LengthFieldSize:])
			require.NoError(t, err)
			sameHeader(t, in, out)

			empty := &Command{Code: 7, SerializeType: st}
			frame, err = c.AppendFrame(nil, empty)
			require.NoError(t, err)
			out, err = c.DecodeFrame(frame[LengthFieldSize:])
			require.NoError(t, err)
			sameHeader(t, empty, out)
			require.Nil(t, out.Body)
		})
	}
}

// The JSON header must be exactly what encoding/json (the official Go client's decoder)
// accepts into its typed struct.
func TestJSONHeaderReadableByEncodingJSON(t *testing.T) {
	var c Codec
	in := sampleCommand(SerializeJSON)
	frame, err := c.AppendFrame(nil, in)
	require.NoError(t, err)
	hlen := int(binary.BigEndian.Uint32(frame[4:]) & maxHeaderLen)
	var goClient struct {
		Code      int16             `json:"code"`
		Language  string            `json:"language"`
		Version   int16             `json:"version"`
		Opaque    int32             `json:"opaque"`
		Flag      int32             `json:"flag"`
		Remark    string            `json:"remark"`
		ExtFields map[string]string `json:"extFields"`
	}
	require.NoError(t, json.Unmarshal(frame[8:8+hlen], &goClient))
	require.Equal(t, in.Code, goClient.Code)
	require.Equal(t, "JAVA", goClient.Language)
	require.Equal(t, in.Version, goClient.Version)
	require.Equal(t, in.Opaque, goClient.Opaque)
	require.Equal(t, in.Flag, goClient.Flag)
	require.Equal(t, in.Remark, goClient.Remark)
	require.Equal(t, in.ExtFields.Map(), goClient.ExtFields)
}

func TestJSONHeaderDecodesClientShapes(t *testing.T) {
	var c Codec
	cases := map[string]struct {
		header string
		check  func(t *testing.T, cmd *Command)
	}{
		"go client": {
			`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`,
			func(t *testing.T, cmd *Command) {
				require.Equal(t, int16(105), cmd.Code)
				require.Equal(t, LanguageGo, cmd.Language)
				require.Equal(t, int16(317), cmd.Version)
				require.Equal(t, "T", cmd.Ext("topic"))
			},
		},
		"java fastjson with extra field and nulls": {
			` { "code" : 0 , "extFields":{"offset":"5","x":null},"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":479, "nested":{"a":[1,2.5e3,true,false,null,{"b":"c"}]}} `,
			func(t *testing.T, cmd *Command) {
				require.Equal(t, int32(9), cmd.Opaque)
				require.True(t, cmd.IsResponse())
				require.Equal(t, "5", cmd.Ext("offset"))
				require.Equal(t, "", cmd.Ext("x"))
			},
		},
		"escapes": {
			`{"code":1,"remark":"a\"b\\c\/d\n\u00e9\ud83d\ude00\u0041","extFields":null}`,
			func(t *testing.T, cmd *Command) {
				require.Equal(t, "a\"b\\c/d\né😀A", cmd.Remark)
				require.Nil(t, cmd.ExtFields)
			},
		},
		"numeric language": {
			`{"code":1,"language":9}`,
			func(t *testing.T, cmd *Command) { require.Equal(t, LanguageGo, cmd.Language) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd, err := c.DecodeFrame(headerOnlyFrame(SerializeJSON, []byte(tc.header)))
			require.NoError(t, err)
			tc.check(t, cmd)
		})
	}
}

func TestJSONHeaderRejectsWhatTheGoClientRejects(t *testing.T) {
	var c Codec
	for _, h := range []string{
		`{"code":1,"extFields":{"queueId":1}}`, // non-string ext value
		`{"code":40000}`,                       // code outside int16
		`{"code":"1"}`,                         // string-typed number
		`{"code":1.5}`,                         // fraction
		`{"opaque":2147483648}`,                // outside int32
		`{"remark":5}`,                         // remark must be a string
		`{"code":1`,                            // truncated
		`{"code":1}x`,                          // trailing garbage
		`{"remark":"a` + "\x01" + `"}`,         // raw control character
		`{"remark":"\x"}`,                      // bad escape
		strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40),
	} {
		_, err := c.DecodeFrame(headerOnlyFrame(SerializeJSON, []byte(h)))
		require.ErrorIs(t, err, ErrMalformedHeader, "header %s", h)
	}
}

// The worked example of the protocol spec: what the official Go client's binary codec
// produces for response code 0, version 479, opaque 1, flag 1, ext {offset:"5"}.
func TestBinaryHeaderMatchesSpecExample(t *testing.T) {
	want, err := hex.DecodeString("00000026" + "01000022" + "0000" + "09" + "01df" + "00000001" + "00000001" +
		"00000000" + "0000000d" + "0006" + "6f6666736574" + "00000001" + "35")
	require.NoError(t, err)
	var c Codec
	cmd := &Command{Code: 0, Language: LanguageGo, Version: 479, Opaque: 1, Flag: FlagResponse,
		ExtFields: ExtOf(map[string]string{"offset": "5"}), SerializeType: SerializeRocketMQ}
	got, err := c.AppendFrame(nil, cmd)
	require.NoError(t, err)
	require.Equal(t, want, got)
	back, err := c.DecodeFrame(want[4:])
	require.NoError(t, err)
	sameHeader(t, cmd, back)
}

func TestBinaryHeaderRejectsBadLengths(t *testing.T) {
	var c Codec
	good, err := c.AppendFrame(nil, &Command{Code: 1, Remark: "r", ExtFields: ExtOf(map[string]string{"k": "v"}), SerializeType: SerializeRocketMQ})
	require.NoError(t, err)
	header := good[8:]
	for _, mutate := range []func([]byte){
		func(b []byte) { binary.BigEndian.PutUint32(b[13:], 0x7fffffff) },         // remark length
		func(b []byte) { binary.BigEndian.PutUint32(b[13:], 0xffffffff) },         // negative remark length
		func(b []byte) { binary.BigEndian.PutUint32(b[18:], 100) },                // ext length
		func(b []byte) { binary.BigEndian.PutUint16(b[22:], 0x7fff) },             // key length
		func(b []byte) { binary.BigEndian.PutUint32(b[25:], 0x7fffffff) },         // value length
		func(b []byte) { binary.BigEndian.PutUint32(b[25:], uint32(0xfffffff0)) }, // negative value length
	} {
		h := append([]byte(nil), header...)
		mutate(h)
		_, err := c.DecodeFrame(headerOnlyFrame(SerializeRocketMQ, h))
		require.ErrorIs(t, err, ErrMalformedHeader)
	}
	_, err = c.DecodeFrame(headerOnlyFrame(SerializeRocketMQ, header[:10]))
	require.ErrorIs(t, err, ErrMalformedHeader)
}

func TestMsgpackHeaderRejectsBadInput(t *testing.T) {
	var c Codec
	good, err := c.AppendFrame(nil, &Command{Code: 1, Remark: "r", ExtFields: ExtOf(map[string]string{"k": "v"}), SerializeType: SerializeMsgpack})
	require.NoError(t, err)
	header := good[8:]
	for i := range header {
		_, err := c.DecodeFrame(headerOnlyFrame(SerializeMsgpack, header[:i]))
		require.ErrorIs(t, err, ErrMalformedHeader, "truncated at %d", i)
	}
	_, err = c.DecodeFrame(headerOnlyFrame(SerializeMsgpack, append(append([]byte(nil), header...), 0xc0)))
	require.ErrorIs(t, err, ErrMalformedHeader, "trailing byte")
	_, err = c.DecodeFrame(headerOnlyFrame(SerializeMsgpack, []byte{0x93, 1, 2, 3}))
	require.ErrorIs(t, err, ErrMalformedHeader, "too few fields")
	_, err = c.DecodeFrame(headerOnlyFrame(SerializeMsgpack, []byte{0x97, 0xcd, 0xff, 0xff, 0, 0, 0, 0, 0xc0, 0x80}))
	require.ErrorIs(t, err, ErrMalformedHeader, "code out of int16 range")
}

func TestFrameErrors(t *testing.T) {
	var c Codec
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, 1<<30)
	_, err := ParseLength(b, DefaultMaxFrameSize)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	binary.BigEndian.PutUint32(b, 0xffffffff)
	_, err = ParseLength(b, DefaultMaxFrameSize)
	require.ErrorIs(t, err, ErrMalformedFrame)
	binary.BigEndian.PutUint32(b, 3)
	_, err = ParseLength(b, DefaultMaxFrameSize)
	require.ErrorIs(t, err, ErrMalformedFrame)

	_, err = c.DecodeFrame([]byte{0, 0})
	require.ErrorIs(t, err, ErrMalformedFrame)
	_, err = c.DecodeFrame([]byte{0, 0, 0, 9, '{', '}'})
	require.ErrorIs(t, err, ErrMalformedFrame, "header length beyond frame")
	_, err = c.DecodeFrame([]byte{7, 0, 0, 2, '{', '}'})
	require.ErrorIs(t, err, ErrUnknownSerializeType)
	_, err = c.AppendFrame(nil, &Command{SerializeType: 9})
	require.ErrorIs(t, err, ErrUnknownSerializeType)
	require.True(t, errors.Is(err, ErrUnknownSerializeType))
}

// An oversized length is refused before anything is allocated for the frame: the check
// costs only the error value, never the 2 GiB the field claims.
func TestParseLengthRejectsOversizedWithoutAllocatingTheFrame(t *testing.T) {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, 1<<31-1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		_, err := ParseLength(b, DefaultMaxFrameSize)
		require.ErrorIs(t, err, ErrFrameTooLarge)
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "bytes allocated for 100 rejections")
	binary.BigEndian.PutUint32(b, 1024)
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ParseLength(b, DefaultMaxFrameSize) }))
}

// headerOnlyFrame builds the part of a frame after the length field.
func headerOnlyFrame(st SerializeType, header []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(st)<<24|uint32(len(header)))
	return append(out, header...)
}
