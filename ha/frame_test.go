package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFrameRoundTrip(t *testing.T) {
	var w bytes.Buffer
	hdr := make([]byte, FrameHeaderSize)
	PutFrameHeader(hdr, FrameHeader{Offset: 1 << 40, Size: 3})
	w.Write(hdr)
	w.WriteString("abc")
	PutFrameHeader(hdr, FrameHeader{Offset: 1<<40 + 3})
	w.Write(hdr)
	w.Write(hdr[:5]) // a frame cut inside its header
	h, body, err := ReadFrame(&w, hdr, nil, 16)
	require.NoError(t, err)
	require.Equal(t, FrameHeader{Offset: 1 << 40, Size: 3}, h)
	require.Equal(t, "abc", string(body))
	h, _, err = ReadFrame(&w, hdr, body, 16)
	require.NoError(t, err)
	require.Zero(t, h.Size)
	_, _, err = ReadFrame(&w, hdr, body, 16)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	PutFrameHeader(hdr, FrameHeader{Offset: 0, Size: 17})
	_, err = DecodeFrameHeader(hdr, 16)
	require.ErrorIs(t, err, ErrProtocol)
}

func TestReportDecoder(t *testing.T) {
	var d ReportDecoder
	var b []byte
	for _, v := range []int64{1, 2, 300} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	_, ok, err := d.Feed(b[:3])
	require.NoError(t, err)
	require.False(t, ok)
	last, ok, err := d.Feed(b[3:20]) // completes 1 and 2, starts 300
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 2, last)
	last, ok, err = d.Feed(b[20:])
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 300, last)
}

// FuzzReportDecoder: however the stream is chunked, the decoder yields the value of the
// last complete 8-byte report, and never panics.
func FuzzReportDecoder(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0}, uint8(3))
	f.Add(bytes.Repeat([]byte{0xff}, 17), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		var d ReportDecoder
		step := int(chunk)%16 + 1
		var (
			last  int64
			got   bool
			fails bool
		)
		for i := 0; i < len(stream); i += step {
			v, ok, err := d.Feed(stream[i:min(i+step, len(stream))])
			if err != nil {
				require.True(t, errors.Is(err, ErrProtocol))
				fails = true
				break
			}
			if ok {
				last, got = v, true
			}
		}
		if fails {
			return
		}
		whole := len(stream) / ReportSize
		require.Equal(t, whole > 0, got)
		if whole > 0 {
			require.Equal(t, int64(binary.BigEndian.Uint64(stream[(whole-1)*ReportSize:])), last)
		}
	})
}

// FuzzReadFrame: arbitrary bytes never panic, and a decoded frame is what was encoded.
func FuzzReadFrame(f *testing.F) {
	hdr := make([]byte, FrameHeaderSize)
	PutFrameHeader(hdr, FrameHeader{Offset: 42, Size: 2})
	f.Add(append(hdr, 'h', 'i'))
	f.Add(hdr[:7])
	f.Fuzz(func(t *testing.T, b []byte) {
		scratch := make([]byte, FrameHeaderSize)
		r := bytes.NewReader(b)
		var buf []byte
		for {
			h, body, err := ReadFrame(r, scratch, buf, 64)
			if err != nil {
				return
			}
			require.GreaterOrEqual(t, h.Offset, int64(0))
			require.Len(t, body, int(h.Size))
			var re [FrameHeaderSize]byte
			PutFrameHeader(re[:], h)
			h2, err := DecodeFrameHeader(re[:], 64)
			require.NoError(t, err)
			require.Equal(t, h, h2)
			buf = body
		}
	})
}
