package metafile

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// open runs Open on dir and "meta.json" (so the file is at path) with a
// logger writing into the returned buffer.
func open(t *testing.T, fsys mmap.FS) (f *File, v string, found bool, logs string, err error) {
	t.Helper()
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	f, v, found, err = Open(fsys, dir, "meta.json", &log, decode)
	return f, v, found, buf.String(), err
}

// readFile returns the contents of p, which must exist.
func readFile(t *testing.T, fsys mmap.FS, p string) string {
	t.Helper()
	data, err := fsys.ReadFile(p)
	require.NoError(t, err)
	return string(data)
}

func TestCheckLocation(t *testing.T) {
	errInvalid := errors.New("invalid options")
	require.NoError(t, CheckLocation("/x", mmap.NewMemFS(), errInvalid))
	err := CheckLocation("", mmap.NewMemFS(), errInvalid)
	require.ErrorIs(t, err, errInvalid)
	require.EqualError(t, err, "invalid options: Dir is empty")
	err = CheckLocation("/x", nil, errInvalid)
	require.ErrorIs(t, err, errInvalid)
	require.EqualError(t, err, "invalid options: FS is nil")
	require.EqualError(t, CheckLocation("", nil, errInvalid), "invalid options: Dir is empty", "Dir is checked first")
}

func TestOpenFreshCreatesDir(t *testing.T) {
	fsys := mmap.NewMemFS()
	f, v, found, logs, err := open(t, fsys)
	require.NoError(t, err)
	require.False(t, found)
	require.Empty(t, v)
	require.Empty(t, logs)
	ok, err := fsys.Exists(dir)
	require.NoError(t, err)
	require.True(t, ok, "Open creates the directory")

	err, bakErr := f.Write([]byte(`{"v":1}`))
	require.NoError(t, err)
	require.NoError(t, bakErr)
	ok, err = fsys.Exists(path + BakSuffix)
	require.NoError(t, err)
	require.False(t, ok, "no backup before there is a previous version")

	err, bakErr = f.Write([]byte(`{"v":2}`))
	require.NoError(t, err)
	require.NoError(t, bakErr)
	require.Equal(t, `{"v":2}`, readFile(t, fsys, path))
	require.Equal(t, `{"v":1}`, readFile(t, fsys, path+BakSuffix))
}

func TestOpenLoadedBytesBecomeBackup(t *testing.T) {
	t.Run("main", func(t *testing.T) {
		main := []byte(" {\"from\":\"main\"}\n")
		fsys := newFS(t, main, []byte(`{"from":"bak"}`))
		f, v, found, logs, err := open(t, fsys)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, `{"from":"main"}`, v)
		require.Empty(t, logs)
		err, bakErr := f.Write([]byte(`{"v":1}`))
		require.NoError(t, err)
		require.NoError(t, bakErr)
		require.Equal(t, string(main), readFile(t, fsys, path+BakSuffix), "the loaded bytes, untrimmed")
	})
	t.Run("backup", func(t *testing.T) {
		bak := []byte(`{"from":"bak"}`)
		fsys := newFS(t, []byte("garbage"), bak)
		f, v, found, logs, err := open(t, fsys)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, string(bak), v)
		require.Contains(t, logs, "loaded metadata from backup copy")
		err, bakErr := f.Write([]byte(`{"v":1}`))
		require.NoError(t, err)
		require.NoError(t, bakErr)
		require.Equal(t, string(bak), readFile(t, fsys, path+BakSuffix), "the good copy, not the garbage")
		require.Equal(t, `{"v":1}`, readFile(t, fsys, path))
	})
}

func TestOpenErrors(t *testing.T) {
	t.Run("mkdir", func(t *testing.T) {
		fsys := failFS(mmap.NewMemFS(), func(p string) bool { return p == dir })
		f, _, found, _, err := open(t, fsys)
		require.ErrorIs(t, err, mmap.ErrInjected)
		require.Contains(t, err.Error(), "create "+dir)
		require.Nil(t, f)
		require.False(t, found)
	})
	t.Run("both corrupt", func(t *testing.T) {
		f, _, found, _, err := open(t, newFS(t, []byte("main-garbage"), []byte("bak-garbage")))
		require.ErrorIs(t, err, errBad)
		require.Contains(t, err.Error(), path)
		require.Nil(t, f)
		require.False(t, found)
	})
	t.Run("read", func(t *testing.T) {
		fsys := failFS(newFS(t, nil, nil), func(p string) bool { return p == path })
		f, _, _, _, err := open(t, fsys)
		require.ErrorIs(t, err, mmap.ErrInjected)
		require.Nil(t, f)
	})
}

func TestFileWriteFailures(t *testing.T) {
	mem := newFS(t, []byte(`{"v":0}`), nil)
	var failMain, failBak bool
	fsys := failFS(mem, func(p string) bool {
		if strings.HasSuffix(p, BakSuffix) {
			return failBak
		}
		return failMain && p == path
	})
	f, _, found, _, err := open(t, fsys)
	require.NoError(t, err)
	require.True(t, found)

	failMain = true
	err, bakErr := f.Write([]byte(`{"v":1}`))
	require.ErrorIs(t, err, mmap.ErrInjected)
	require.NoError(t, bakErr)
	require.Equal(t, `{"v":0}`, readFile(t, mem, path))

	failMain, failBak = false, true
	err, bakErr = f.Write([]byte(`{"v":2}`))
	require.NoError(t, err, "a failed backup does not stop the main write")
	require.ErrorIs(t, bakErr, mmap.ErrInjected)
	require.Equal(t, `{"v":2}`, readFile(t, mem, path))

	failBak = false
	err, bakErr = f.Write([]byte(`{"v":3}`))
	require.NoError(t, err)
	require.NoError(t, bakErr)
	require.Equal(t, `{"v":2}`, readFile(t, mem, path+BakSuffix),
		"the backup holds the last written version; the failed one never counted")
}

func TestFileConcurrentWrites(t *testing.T) {
	fsys := mmap.NewMemFS()
	f, _, _, _, err := open(t, fsys)
	require.NoError(t, err)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 20 {
				if err, bakErr := f.Write([]byte{'{', byte('a' + i), byte('a' + j), '}'}); err != nil || bakErr != nil {
					panic(errors.Join(err, bakErr))
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	main, bak := readFile(t, fsys, path), readFile(t, fsys, path+BakSuffix)
	require.Len(t, main, 4)
	require.Len(t, bak, 4)
	require.NotEqual(t, main, bak, "each write keeps the one before it")
}

func TestMarshalIndent(t *testing.T) {
	b, err := MarshalIndent(map[string]any{"a": map[string]int{"b": 1}})
	require.NoError(t, err)
	require.Equal(t, "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n", string(b))
	_, err = MarshalIndent(map[string]any{"f": func() {}})
	require.ErrorContains(t, err, "encode: ")
}

func TestDecodeObject(t *testing.T) {
	type obj struct {
		A int `json:"a"`
	}
	cases := []struct {
		name, in string
		prepare  func([]byte) []byte
		want     int
		err      string
	}{
		{"object", `{"a":3}`, nil, 3, ""},
		{"white space", " \n\t{\"a\":4}\r\n", nil, 4, ""},
		{"empty", "", nil, 0, "not a JSON object"},
		{"blank", " \n", nil, 0, "not a JSON object"},
		{"array", `[1]`, nil, 0, "not a JSON object"},
		{"number", `1`, nil, 0, "not a JSON object"},
		{"truncated", `{"a":`, nil, 0, "unexpected end of JSON input"},
		{"wrong type", `{"a":"x"}`, nil, 0, "cannot unmarshal"},
		{"prepare sees the trimmed object", " {\"b\":5} ", func(b []byte) []byte {
			require.Equal(t, `{"b":5}`, string(b))
			return []byte(`{"a":5}`)
		}, 5, ""},
		{"prepare not called on a non-object", `x`, func([]byte) []byte {
			panic("called")
		}, 0, "not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o obj
			err := DecodeObject([]byte(tc.in), &o, tc.prepare)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, o.A)
		})
	}
}
