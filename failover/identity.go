package failover

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Identity file layout (`<store dir>/controllerBrokerId`, big-endian): the broker id the
// controllers assigned, kept so that a restarted broker registers under the same id (the
// controllers know its log by it: SyncStateSet membership, elections).
//
//	 0  magic    4 B     "FBID"
//	 4  version  uint8   1
//	 5  id       int64   the assigned broker id, ≥ 1
//	13  nameLen  uint16  length of the broker group name
//	15  name     nameLen bytes, the broker group (brokerName) the id belongs to
//	 …  crc      uint32  IEEE CRC-32 of every byte before it
//
// The file is replaced atomically (temp file, fsync, rename, directory fsync), so it is
// never torn; a damaged one is an error, not a reason to ask for a new id.
const (
	identityName    = "controllerBrokerId"
	identityMagic   = "FBID"
	identityVersion = 1
	identityFixed   = 4 + 1 + 8 + 2 // bytes before the name
)

// ErrBadIdentity is wrapped by the errors of a broker-id file that does not decode, or
// that belongs to another broker group.
var ErrBadIdentity = errors.New("failover: bad broker id file")

// identity is the decoded broker-id file.
type identity struct {
	id    int64
	group string
}

// encodeIdentity lays out the file.
func encodeIdentity(v identity) []byte {
	b := make([]byte, 0, identityFixed+len(v.group)+4)
	b = append(b, identityMagic...)
	b = append(b, identityVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(v.id))
	b = binary.BigEndian.AppendUint16(b, uint16(len(v.group)))
	b = append(b, v.group...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeIdentity reads the file; errors wrap ErrBadIdentity.
func decodeIdentity(b []byte) (identity, error) {
	bad := func(format string, args ...any) (identity, error) {
		return identity{}, fmt.Errorf("%w: "+format, append([]any{ErrBadIdentity}, args...)...)
	}
	if len(b) < identityFixed+4 || string(b[:4]) != identityMagic {
		return bad("%d bytes without the magic", len(b))
	}
	if b[4] != identityVersion {
		return bad("version %d", b[4])
	}
	n := int(binary.BigEndian.Uint16(b[13:]))
	if len(b) != identityFixed+n+4 {
		return bad("%d bytes for a %d-byte name", len(b), n)
	}
	end := identityFixed + n
	if binary.BigEndian.Uint32(b[end:]) != crc32.ChecksumIEEE(b[:end]) {
		return bad("crc mismatch")
	}
	v := identity{id: int64(binary.BigEndian.Uint64(b[5:])), group: string(b[identityFixed:end])}
	if v.id < 1 {
		return bad("broker id %d", v.id)
	}
	return v, nil
}

// loadIdentity returns the broker id stored in dir for group, 0 when there is no file
// yet. A file of another group is an error (wrapping ErrBadIdentity): the data directory
// holds another group's log.
func loadIdentity(fsys mmap.FS, dir, group string) (int64, error) {
	path := filepath.Join(dir, identityName)
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failover: read %s: %w", path, err)
	}
	v, err := decodeIdentity(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if v.group != group {
		return 0, fmt.Errorf("%w: %s holds broker id %d of group %q, not of %q", ErrBadIdentity, path, v.id, v.group, group)
	}
	return v.id, nil
}

// storeIdentity writes the broker id of group into dir, durably.
func storeIdentity(fsys mmap.FS, dir, group string, id int64) error {
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	path := filepath.Join(dir, identityName)
	if err := fsys.WriteFileAtomic(path, encodeIdentity(identity{id: id, group: group})); err != nil {
		return fmt.Errorf("failover: write %s: %w", path, err)
	}
	return nil
}
