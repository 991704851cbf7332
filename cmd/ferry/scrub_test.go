package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// TestScrubFindsQuarantinesAndThenIsClean writes a store, flips a byte of a message body
// far below its checkpoint, and runs `ferry scrub` twice: the first finds and quarantines
// the damage (exit 3), the second finds the store clean (exit 0). A missing store and a
// store in use are errors (exit 1).
func TestScrubFindsQuarantinesAndThenIsClean(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	o := store.DefaultOptions()
	o.Dir, o.SegmentSize = dir, 64<<20
	s, err := store.Open(o)
	require.NoError(t, err)
	s.Start()
	var victim int64
	for i := range 100 {
		props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("U%03d", i)})
		require.NoError(t, err)
		rec := message.Record{Topic: []byte("ScrubTopic"), Body: fmt.Appendf(nil, "payload-%03d", i), Properties: props}
		res, err := s.PutMessage(&rec, false)
		require.NoError(t, err)
		if i == 30 {
			victim = res.PhysicalOffset
		}
	}
	require.NoError(t, s.Shutdown(context.Background()))
	seg := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", 0))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	i := bytes.Index(b[victim:], []byte("payload-030"))
	require.Positive(t, i)
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{'X'}, victim+int64(i))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"scrub", "--data-dir", dir, "--log-level", "error"}, &out, &errb)
	require.Equal(t, scrubDamaged, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, out.String(), "quarantined now  1 damaged ranges")
	require.Contains(t, out.String(), "99 records")
	out.Reset()
	code = run(context.Background(), []string{"scrub", "--data-dir", dir, "--log-level", "error"}, &out, &errb)
	require.Equal(t, scrubClean, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
	require.Contains(t, out.String(), "quarantined      1 ranges in all")

	s, err = store.Open(o)
	require.NoError(t, err)
	errb.Reset()
	require.Equal(t, scrubFailed, run(context.Background(), []string{"scrub", "--data-dir", dir}, &out, &errb))
	require.Contains(t, errb.String(), "in use")
	require.NoError(t, s.Shutdown(context.Background()))

	errb.Reset()
	require.Equal(t, scrubFailed, run(context.Background(), []string{"scrub", "--data-dir", filepath.Join(dir, "nope")}, &out, &errb))
	require.Contains(t, errb.String(), "no store")
}

// TestScrubDataDirReadsTheSegmentSize runs `ferry scrub --data-dir` on a store whose
// segments are smaller than any default (and than the default maxMessageSize allows in
// a configuration): the scrub takes the segment size from the store's files, checks the
// store and leaves every segment file at its size.
func TestScrubDataDirReadsTheSegmentSize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	o := store.DefaultOptions()
	o.Dir, o.SegmentSize = dir, 1<<20
	s, err := store.Open(o)
	require.NoError(t, err)
	s.Start()
	for i := range 3000 { // about 3 segments
		rec := message.Record{Topic: []byte("SizeTopic"), Body: fmt.Appendf(make([]byte, 1000), "payload-%04d", i)}
		_, err := s.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	require.NoError(t, s.Shutdown(context.Background()))
	sizes := func() map[string]int64 {
		ents, err := os.ReadDir(filepath.Join(dir, "commitlog"))
		require.NoError(t, err)
		m := map[string]int64{}
		for _, e := range ents {
			fi, err := e.Info()
			require.NoError(t, err)
			m[e.Name()] = fi.Size()
		}
		return m
	}
	before := sizes()
	require.Greater(t, len(before), 2)

	for range 2 { // the second run sees what the first left
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"scrub", "--data-dir", dir, "--log-level", "error"}, &out, &errb)
		require.Equal(t, scrubClean, code, "stdout: %s\nstderr: %s", out.String(), errb.String())
		require.Contains(t, out.String(), "3000 records")
		require.Equal(t, before, sizes(), "scrub leaves the segment files at their size")
	}
}
