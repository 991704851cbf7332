// Package metafiletest is the golden-file harness of the tests of the broker's metadata
// files (topics.json, subscriptionGroup.json, consumerOffset.json): an in-memory file
// system holding a main file and its .bak copy, with RocketMQ-written files from the
// package's testdata as the main file or as fuzz seeds. Only tests import it.
package metafiletest

import (
	"os"
	"path"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// Files returns a MemFS holding file's directory, with file and its .bak copy written
// when main and bak are not nil.
func Files(tb testing.TB, file string, main, bak []byte) *mmap.MemFS {
	tb.Helper()
	fsys := mmap.NewMemFS()
	must(tb, fsys.MkdirAll(path.Dir(file)))
	if main != nil {
		must(tb, fsys.WriteFileAtomic(file, main))
	}
	if bak != nil {
		must(tb, fsys.WriteFileAtomic(file+".bak", bak)) // metafile.BakSuffix: packages under internal/ import nothing of broker (depguard)
	}
	return fsys
}

// Golden returns a MemFS whose file (with no .bak copy) is the golden file
// testdata/name, and that file's contents.
func Golden(tb testing.TB, file, name string) (*mmap.MemFS, []byte) {
	tb.Helper()
	golden := testkit.Testdata(tb, name)
	return Files(tb, file, golden, nil), golden
}

// Seed adds the golden files testdata/names to f's corpus.
func Seed(f *testing.F, names ...string) {
	f.Helper()
	for _, name := range names {
		f.Add(testkit.Testdata(f, name))
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// EachFS runs test as a subtest on each file system a metadata file may live on:
// "memfs", a new in-memory one with dir /store, and "osfs", the real one with dir a
// temporary directory (fsys is then an mmap.OSFS).
func EachFS(t *testing.T, test func(t *testing.T, fsys mmap.FS, dir string)) {
	t.Helper()
	t.Run("memfs", func(t *testing.T) { test(t, mmap.NewMemFS(), "/store") })
	t.Run("osfs", func(t *testing.T) { test(t, mmap.OSFS{}, t.TempDir()) })
}

// DirNames returns the names of the entries of dir on the real file system, sorted: what
// the writes of a test left behind.
func DirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	must(tb, err)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
