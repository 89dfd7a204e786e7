// Package slots computes the hash slot of a key in a Redis Cluster, and
// splits the keys of a set of resources by slot, for the adapters of nodes
// that are clusters (redlock/goredis, redlock/rueidis).
package slots

import (
	"slices"
	"strings"
)

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns the hash slot of key: CRC16 (XMODEM) of its hash tag (the text
// between the first "{" and the first "}" after it, when not empty) or of
// the whole key, modulo 16384, as Redis Cluster computes it.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % Count
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Group is the keys of a set that share one hash slot: their positions in
// the set, in the set's order.
type Group struct {
	// Slot is the keys' hash slot.
	Slot int
	// Idx are the positions of the keys in the set.
	Idx []int
}

// Split groups keys by hash slot, the groups in the order of their slots.
// Keys that must be stepped together (a lock key and its fence key) share a
// slot by their hash tag, so keys[i] stands for them all.
func Split(keys []string) []Group {
	var out []Group
	for i, k := range keys {
		s := Of(k)
		j := slices.IndexFunc(out, func(g Group) bool { return g.Slot == s })
		if j < 0 {
			out = append(out, Group{Slot: s})
			j = len(out) - 1
		}
		out[j].Idx = append(out[j].Idx, i)
	}
	slices.SortFunc(out, func(a, b Group) int { return a.Slot - b.Slot })
	return out
}

// Pick returns the elements of xs at the positions idx.
func Pick(xs []string, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}
