package redlock

import (
	"math"
	"strings"
	"time"
)

// The options of a client (Option) and of one acquisition (LockOption),
// their defaults and their checks; then the layout of the lock keys that
// the prefixes and hash tags make (keyOf). The options of a feature
// (fencing, the hand-off, records, owners, ...) are in its own file.

// Defaults of the options, as stated on each option.
const (
	DefaultTTL         = 10 * time.Second
	DefaultDriftFactor = 0.01
	DefaultNodeTimeout = 50 * time.Millisecond
	// DefaultReleaseTimeout is the default of WithReleaseTimeout.
	DefaultReleaseTimeout = time.Second
	DefaultRetryMin       = 10 * time.Millisecond
	DefaultRetryMax       = 100 * time.Millisecond
	DefaultKeyPrefix      = "dlm:lock:"
)

// Option configures a Client (New, and the adapters' Dial functions).
type Option interface{ applyClient(*clientOptions) }

// LockOption configures one acquisition (Lock, TryLock), overriding the
// client's setting.
type LockOption interface{ applyLock(*lockOptions) }

// SharedOption is an option that configures a Client's default and may also
// be given to one acquisition to override it.
type SharedOption interface {
	Option
	LockOption
}

// lockOptions are the settings of one acquisition.
type lockOptions struct {
	ttl         time.Duration
	tries       int // 0: until the context ends
	retryMin    time.Duration
	retryMax    time.Duration
	driftFactor float64

	autoExtend    bool          // WithAutoExtend (life.go)
	extendEvery   time.Duration // 0: ttl/3
	maxExtensions int

	value    string // WithValue (handle.go); "" with valueSet unset: random (R4)
	valueSet bool
}

// clientOptions are a client's settings; lock holds the acquisition defaults.
type clientOptions struct {
	lock           lockOptions
	nodeTimeout    time.Duration
	releaseTimeout time.Duration // WithReleaseTimeout
	prefix         string
	seed           uint64
	seeded         bool
	noHandoff      bool // WithHandoff(false), handoff.go
	handoffLimit   int  // WithHandoffLimit, handoff.go
	handoffKeep    bool // WithHandoffKeep, handoff.go

	fencing        bool // WithFencing and the rest of fencing.go
	fencePrefix    string
	fenceRetention time.Duration
	recordPrefix   string        // WithRecordPrefix (record.go)
	maxTTL         time.Duration // WithMaxTTL (bounds.go)
	infoPrefix     string        // WithInfoPrefix (bounds.go)
	owner          string        // WithOwner (owner.go)
	ownerSet       bool
	hashTags       bool       // WithHashTags (the key layout, below)
	byzantine      int        // WithByzantineNodes (client.go)
	promotable     bool       // WithPromotableReplicas (replicas.go)
	unchecked      bool       // WithUncheckedNodes (nodecheck.go)
	observers      []Observer // WithObserver, WithLogger (observer.go)
}

func defaultClientOptions() clientOptions {
	return clientOptions{
		lock: lockOptions{
			ttl:         DefaultTTL,
			retryMin:    DefaultRetryMin,
			retryMax:    DefaultRetryMax,
			driftFactor: DefaultDriftFactor,

			maxExtensions: DefaultMaxExtensions,
		},
		nodeTimeout:    DefaultNodeTimeout,
		releaseTimeout: DefaultReleaseTimeout,
		prefix:         DefaultKeyPrefix,
		handoffLimit:   DefaultHandoffLimit,
		fencePrefix:    DefaultFencePrefix,
		recordPrefix:   DefaultRecordPrefix,
		maxTTL:         DefaultMaxTTL,
		infoPrefix:     DefaultInfoPrefix,
	}
}

type sharedOption func(*lockOptions)

func (f sharedOption) applyClient(o *clientOptions) { f(&o.lock) }
func (f sharedOption) applyLock(o *lockOptions)     { f(o) }

type clientOption func(*clientOptions)

func (f clientOption) applyClient(o *clientOptions) { f(o) }

// WithTTL sets the lock validity time (R6): how long a key lives on each node
// and so the longest a holder may work before another client may acquire.
// Default 10s. It must exceed the clock drift and the node timeout.
func WithTTL(ttl time.Duration) SharedOption {
	return sharedOption(func(o *lockOptions) { o.ttl = ttl })
}

// WithTries bounds the number of attempts Lock makes (R10). Default 0: Lock
// keeps trying until it acquires or its context ends. TryLock always makes
// exactly one attempt.
func WithTries(n int) SharedOption {
	return sharedOption(func(o *lockOptions) { o.tries = n })
}

// WithRetryDelay sets the range of the random delay between attempts (R10:
// random, so that contending clients desynchronize). Default 10ms to 100ms.
func WithRetryDelay(min, max time.Duration) SharedOption {
	return sharedOption(func(o *lockOptions) { o.retryMin, o.retryMax = min, max })
}

// WithDriftFactor sets the clock drift factor of R9: drift = ttl x factor +
// 2 ms is subtracted from every validity. Default 0.01.
func WithDriftFactor(f float64) SharedOption {
	return sharedOption(func(o *lockOptions) { o.driftFactor = f })
}

// WithNodeTimeout sets the floor of the bound on each acquisition,
// extension and fencing request to each node (R8.2), so that a node that is
// down does not hold the client up. The bound adapts to the round trips
// the client sees, as TCP's retransmission timeout does: it is the
// smoothed time to the quorum-th answer plus four mean deviations, never
// less than d and never more than twenty times d nor a tenth of the ttl
// (but at least d); a new client, which has seen no round trip, waits up to
// that limit, and a request whose time ran out before a quorum answered
// doubles the bound of the next ones until an answer comes; a node that
// has answered other requests within the last limit is waited for, up to
// the limit, as busy rather than failed. So healthy nodes
// that all answer late because the machine is busy are not reported as
// failed, while one slow or frozen node never moves the bound (it is not
// among the quorum-th fastest). A node that answers later than the bound
// counts as timed out for that attempt only (Lock retries); the decision
// never waits for it when a quorum can be had from the others. A node
// that answers after the limit is waited for past it while the quorum
// needs it: up to ttl/2 - drift for a grant (a fenced one's second phase
// half the validity left), until the lock's end for an extension (see the
// package documentation). Releases
// have their own, longer bound (WithReleaseTimeout). Default 50ms; it must
// be well under the ttl (and is refused when it is not less than the ttl).
func WithNodeTimeout(d time.Duration) Option {
	return clientOption(func(o *clientOptions) { o.nodeTimeout = d })
}

// WithReleaseTimeout bounds each release request to each node made by
// Unlock (R5, R12), a hand-over's included. Such releases are not timed by
// R8.2: a late release costs no validity, while a release given up on a
// healthy node that answers slowly because its machine is busy would leave
// the key for a whole ttl and block every waiter that long. Unlock still
// returns as soon as a quorum confirmed; only a quorum of slow or frozen
// nodes makes it wait, at most this long, or, for a node the client
// knows as slow (it answered another request after its limit), up to
// the lock's ttl less the drift. The releases of a failed attempt
// (R8.5) keep a bound of twice the attempt's node timeout, from the
// attempt's decision, or from its answer for a node that answered after
// that bound (a slow node: its key is released all the same). No call waits
// past its context's end for a release: TryLock and the last try of Lock
// wait for the releases of their failed attempt only until ctx ends, and
// Unlock (see there) too; what is still owed goes on in the background,
// and Client.Close waits for it. Default DefaultReleaseTimeout
// (1s); it is never shorter than the node timeout.
func WithReleaseTimeout(d time.Duration) Option {
	return clientOption(func(o *clientOptions) { o.releaseTimeout = d })
}

// WithKeyPrefix sets the prefix of the lock keys on the nodes: the key of
// resource r is prefix+r. Default "dlm:lock:". New refuses, with
// ErrInvalid, a prefix that starts the fence or record key prefix or
// starts with one of them ("dlm:", "dlm:fence:"): a release or an
// extension through it could reach a fence counter and send tokens back.
func WithKeyPrefix(p string) Option {
	return clientOption(func(o *clientOptions) { o.prefix = p })
}

// WithRetrySeed seeds the random retry delays, so that a run can be replayed
// (the checker uses it). Default: a seed from crypto/rand. Lock values always
// come from crypto/rand (R4), whatever the seed.
func WithRetrySeed(seed uint64) Option {
	return clientOption(func(o *clientOptions) { o.seed, o.seeded = seed, true })
}

// validate checks one acquisition's settings against the node timeout.
func (o lockOptions) validate(nodeTimeout time.Duration) error {
	switch {
	case o.ttl <= 0:
		return invalidf("ttl must be positive, got %v", o.ttl)
	case o.driftFactor < 0 || o.driftFactor >= 1 || math.IsNaN(o.driftFactor):
		return invalidf("drift factor must be in [0, 1), got %v", o.driftFactor)
	case o.ttl <= drift(o.ttl, o.driftFactor):
		return invalidf("ttl %v must exceed the clock drift %v (ttl x %v + 2ms)", o.ttl, drift(o.ttl, o.driftFactor), o.driftFactor)
	case nodeTimeout >= o.ttl:
		return invalidf("node timeout %v must be well under the ttl %v", nodeTimeout, o.ttl)
	case o.tries < 0:
		return invalidf("tries must be 0 (until the context ends) or more, got %d", o.tries)
	case o.retryMin < 0 || o.retryMax < o.retryMin:
		return invalidf("retry delay range must satisfy 0 <= min <= max, got [%v, %v]", o.retryMin, o.retryMax)
	}
	if o.valueSet {
		if err := checkValue(o.value); err != nil {
			return err
		}
	}
	return o.validateLife()
}

func (o clientOptions) validate() error {
	if o.nodeTimeout <= 0 {
		return invalidf("node timeout must be positive, got %v", o.nodeTimeout)
	}
	if o.releaseTimeout <= 0 {
		return invalidf("release timeout must be positive, got %v", o.releaseTimeout)
	}
	if o.ownerSet {
		if err := checkOwner(o.owner); err != nil {
			return err
		}
	}
	if o.maxTTL <= 0 {
		return invalidf("max ttl must be positive, got %v", o.maxTTL)
	}
	if err := o.checkTTL(o.lock.ttl); err != nil {
		return err
	}
	if o.handoffLimit < 1 {
		return invalidf("hand-off limit must be at least 1 (keeping a lock within one client is always bounded, R17), got %d", o.handoffLimit)
	}
	return o.lock.validate(o.nodeTimeout)
}

// checkTTL refuses a ttl past the client's bound (WithMaxTTL, bounds.go).
func (o clientOptions) checkTTL(ttl time.Duration) error {
	if ttl > o.maxTTL {
		return invalidf("ttl %v is over the client's bound %v (WithMaxTTL)", ttl, o.maxTTL)
	}
	return nil
}

// checkRetention refuses a ttl that the fence retention does not exceed:
// the fence key must outlive the lock it fences (WithFenceRetention,
// fencing.go).
func (o clientOptions) checkRetention(ttl time.Duration) error {
	if o.fencing && o.fenceRetention > 0 && o.fenceRetention <= ttl {
		return invalidf("fence retention %v must exceed the ttl %v (a fence key must outlive its lock; retention is meant to be long, days)", o.fenceRetention, ttl)
	}
	return nil
}

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
// The layout is a property of each node, not of the client's node list:
// the keys on a node that is a Redis Cluster (adapter.ClusterNode) always
// carry hash tags, which it needs; the keys on a plain master carry them
// only when the client is built WithHashTags. So a plain master's keys
// are the same whether or not a cluster node is in the list, and a
// rollout that puts a cluster node in place of a plain one is, for the
// others, like one that puts an empty master there. The client builds the
// keys in its own layout (keyOf: tagged only WithHashTags), and a client
// without WithHashTags tags the keys it hands a cluster node on the way
// (layout.go: tagNode). Every client of the same resources must use the
// same layout on each node, as it uses the same prefixes. The prefixes
// must contain no "{" or "}" when any node's keys carry hash tags, where
// they would move the tag.

// WithHashTags builds every key with a hash tag around the resource name,
// on every node (see the package documentation: "Nodes that are Redis
// Clusters"), so that the keys of one resource share a hash slot of a
// Redis Cluster. Default: off; the keys on a node that is a Redis Cluster
// (adapter.ClusterNode) carry hash tags all the same, and those on a plain
// master do not. Every client of the same resources must agree on it. A
// client of versions before the per-node layout tagged every node's keys
// as soon as one node was a cluster: WithHashTags keeps that layout.
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

// HashTaggedKey returns the key of resource under prefix as it is named on
// a node whose keys carry hash tags (a node that is a Redis Cluster, or
// any node of a client built WithHashTags):
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

// checkLayout refuses prefixes that would move the hash tag, when any
// node's keys carry one: with WithHashTags, or on a node that is a Redis
// Cluster.
func (o *clientOptions) checkLayout(nodes []Node) error {
	tags := o.hashTags
	for _, n := range nodes {
		tags = tags || isCluster(n)
	}
	if !tags {
		return nil
	}
	for _, p := range []struct{ what, prefix string }{{"lock key", o.prefix}, {"fence key", o.fencePrefix}, {"record key", o.recordPrefix}} {
		if strings.ContainsAny(p.prefix, "{}") {
			return invalidf("%s prefix %q contains a brace: with hash tags (WithHashTags, or on a node that is a Redis Cluster) every key of a resource must be tagged by the resource alone; choose a prefix without { or }", p.what, p.prefix)
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
