package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrame is the default size limit of one frame: far above any
// valid message (a chain of 256 signatures is about 17 KiB) and small enough
// that a peer cannot make a general allocate much.
const DefaultMaxFrame = 64 << 10

// ErrFrameTooLarge is returned by ReadFrame when a peer announces a frame
// above the limit; the connection is then cut.
var ErrFrameTooLarge = errors.New("tcp: frame too large")

// WriteFrame writes payload as one frame: a 4-byte big-endian length, then
// the bytes.
func WriteFrame(w io.Writer, payload []byte) error {
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame of at most limit bytes.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if int64(size) > int64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, limit)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
