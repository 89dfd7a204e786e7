package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
)

// valueSize is the number of random bytes in a lock value (R4: 20 bytes from
// a secure source).
const valueSize = 20

// valueSource hands out lock values from crypto/rand, reading it in blocks
// so that an acquisition does not pay a system call.
type valueSource struct {
	mu  sync.Mutex
	buf [valueSize * 64]byte
	off int
}

func newValueSource() *valueSource { return &valueSource{off: len((&valueSource{}).buf)} }

// next returns a fresh value: 20 secure random bytes, base64url-encoded.
func (s *valueSource) next() (string, error) {
	var raw [valueSize]byte
	s.mu.Lock()
	if s.off == len(s.buf) {
		if _, err := rand.Read(s.buf[:]); err != nil {
			s.mu.Unlock()
			return "", err
		}
		s.off = 0
	}
	copy(raw[:], s.buf[s.off:s.off+valueSize])
	clear(s.buf[s.off : s.off+valueSize])
	s.off += valueSize
	s.mu.Unlock()
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}
