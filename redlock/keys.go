package redlock

import (
	"strings"

	"dlm/redlock/adapter"
)

// The key layout, in one place. Resource r has a lock key (WithKeyPrefix),
// a fence key (WithFencePrefix, WithFencing), a record key
// (WithRecordPrefix, Lock.PutRecord) and read-write marks, which live in
// its lock key (rw.go); a release of its lock key is announced on a
// channel named after the lock key (WithHandoff). Each is its prefix
// followed by r, or, with hash tags, by "{" + r + "}" with every "\" of r
// written "\\" and every "}" written "\]": a Redis Cluster then places
// all the keys of r, and its release channel, in one hash slot (the slot
// of the text between the first "{" and the first "}" after it), so that
// every script on r runs on one master. The escape is one to one, so two
// resources never share a key, and leaves a tag that is never empty, so
// that the slot is the tag's.
//
// Hash tags are used when the client is built WithHashTags, or when any of
// its nodes is a Redis Cluster (adapter.ClusterNode). Every client of the
// same resources must use the same layout, as it uses the same prefixes: a
// client without hash tags and one with them lock different keys. The
// prefixes must then contain no "{" or "}", which would move the tag.

// WithHashTags builds every key with a hash tag around the resource name
// (see the package documentation: "Nodes that are Redis Clusters"), so that
// the keys of one resource share a hash slot of a Redis Cluster. Default:
// off, and on when any node is a Redis Cluster (adapter.ClusterNode). Every
// client of the same resources must agree on it.
func WithHashTags() Option {
	return clientOption(func(o *clientOptions) { o.hashTags = true })
}

// keyOf returns the key of resource under prefix (the layout above).
func (o *clientOptions) keyOf(prefix, resource string) string {
	if !o.hashTags {
		return prefix + resource
	}
	return HashTaggedKey(prefix, resource)
}

// HashTaggedKey returns the key of resource under prefix as a client with
// hash tags builds it (WithHashTags, or a node that is a Redis Cluster):
// prefix, then the resource between braces with every "\" written "\\"
// and every "}" written "\]". For tools that read a cluster node's keys.
func HashTaggedKey(prefix, resource string) string {
	return prefix + "{" + hashTag(resource) + "}"
}

// resourceOf returns the resource whose key under prefix is key: keyOf's
// inverse.
func (o *clientOptions) resourceOf(prefix, key string) string {
	s := strings.TrimPrefix(key, prefix)
	if !o.hashTags {
		return s
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == ']' {
				b.WriteByte('}')
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hashTag escapes r for use between "{" and "}": "\" as "\\", "}" as "\]".
func hashTag(r string) string {
	if !strings.ContainsAny(r, `\}`) {
		return r
	}
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch r[i] {
		case '\\':
			b.WriteString(`\\`)
		case '}':
			b.WriteString(`\]`)
		default:
			b.WriteByte(r[i])
		}
	}
	return b.String()
}

// useHashTags turns hash tags on when any node is a Redis Cluster, and
// refuses prefixes that would move the tag.
func (o *clientOptions) useHashTags(nodes []Node) error {
	for _, n := range nodes {
		if cn, ok := n.(adapter.ClusterNode); ok && cn.Cluster() {
			o.hashTags = true
			break
		}
	}
	if !o.hashTags {
		return nil
	}
	for _, p := range []struct{ what, prefix string }{{"lock key", o.prefix}, {"fence key", o.fencePrefix}, {"record key", o.recordPrefix}} {
		if strings.ContainsAny(p.prefix, "{}") {
			return invalidf("%s prefix %q contains a brace: with hash tags (WithHashTags, or a node that is a Redis Cluster) every key of a resource must be tagged by the resource alone; choose a prefix without { or }", p.what, p.prefix)
		}
	}
	return nil
}

// checkPrefixes refuses a lock key prefix that overlaps the prefix of the
// fence counters or of the leaders' records, with fencing or without: a
// resource name (or a hand-made handle) could then make a lock key equal
// a fence key, and a release or an extension, which act on any key that
// holds the value they are given, would delete a counter or give it an
// expiry, so that tokens go back. An empty fence or record prefix is
// left to the feature that uses it (WithFencing refuses it).
func (o clientOptions) checkPrefixes() error {
	for _, p := range []struct{ what, prefix string }{{"fence key", o.fencePrefix}, {"record key", o.recordPrefix}} {
		if p.prefix != "" && (strings.HasPrefix(p.prefix, o.prefix) || strings.HasPrefix(o.prefix, p.prefix)) {
			return invalidf("lock key prefix %q and %s prefix %q overlap: a resource name could make a lock key equal one of those keys, and a release or an extension would then reach it; choose a lock key prefix neither of which starts the other, such as the default %q or \"myapp:lock:\"", o.prefix, p.what, p.prefix, DefaultKeyPrefix)
		}
	}
	return nil
}
