package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
)

// valueSize is the number of random bytes in a lock value (R4: 20 bytes from
// a secure source).
const valueSize = 20

// tagSize is the number of random bytes of a client's tag, which starts
// each of its values: tagLen characters once base64url-encoded, a whole
// number of characters, so that the tag is a prefix of the encoded value.
const (
	tagSize  = 6
	tagLen   = tagSize * 4 / 3
	valueLen = tagLen + (valueSize*8+5)/6
)

// valueSource hands out lock values from crypto/rand, reading it in blocks
// so that an acquisition does not pay a system call. Every value starts
// with the client's tag (random, drawn once per client): the release
// announcements of the hand-off (R14) then tell the clients which client
// released, so that they all rank their waiters alike (handoff_wait.go: rank).
// The 20 random bytes after it keep every value unique and unguessable
// (R4).
type valueSource struct {
	tag string
	mu  sync.Mutex
	buf [valueSize * 64]byte
	off int
}

func newValueSource() (*valueSource, error) {
	var raw [tagSize]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	return &valueSource{tag: base64.RawURLEncoding.EncodeToString(raw[:]), off: len((&valueSource{}).buf)}, nil
}

// tagOf returns the client tag that starts value, or "" for a value that
// no client of this package drew (WithValue's).
func tagOf(value string) string {
	if len(value) != valueLen {
		return ""
	}
	return value[:tagLen]
}

// next returns a fresh value: the client's tag, then 20 secure random bytes,
// base64url-encoded.
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
	var b [valueLen]byte
	copy(b[:], s.tag)
	base64.RawURLEncoding.Encode(b[tagLen:], raw[:])
	return string(b[:]), nil
}
