package redlock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// Locks that cross processes: a held lock written as a Handle, resumed by
// another process (Client.Resume) to extend or unlock it, or released by
// its handle alone (Client.Release). The argument is in the package
// documentation ("Locks that cross processes").

// The bounds of a lock value given with WithValue (R4).
const (
	// MinValueLen is the shortest value WithValue accepts, in bytes.
	MinValueLen = 16
	// MaxValueLen is the longest value WithValue accepts, in bytes.
	MaxValueLen = 256
)

// handlePrefix starts the text form of a Handle: "dlm" and the version of
// the format, then a dot.
const handlePrefix = "dlm1."

// lockOnly is an option of one acquisition that has no client default.
type lockOnly func(*lockOptions)

func (f lockOnly) applyLock(o *lockOptions) { f(o) }

// WithValue makes the acquisition use v as the lock value instead of 20
// random bytes from crypto/rand (the default, R4). Whoever knows the value
// can extend and release the lock (R5, R17), so v is a secret and must be
// unique: no other acquisition of any resource, by any client, may ever use
// it, a failed or cancelled Lock call of this one included (R4); build it
// from a secure random source. v must be MinValueLen to MaxValueLen bytes
// of printable ASCII without spaces (0x21 to 0x7e): the floor refuses
// values too short to be a secret (a job number, a host name), the ceiling
// keeps what every request carries and every node stores small, and the
// character set lets the value travel in environment variables and command
// lines unquoted. Lock, TryLock and Client.Do refuse a value outside these
// bounds with ErrInvalid; Client.Resume refuses WithValue (the value comes
// from the handle).
//
// A Lock call with a value of the caller's waits, after each failed
// attempt, for every node to answer and be released (as a final attempt
// does) before it tries again: the release of one attempt must not land
// on a node after the next attempt set the same value there. Such a call
// is also never handed a lock by an Unlock of its client (WithHandoff);
// it is woken to retry instead. A failed attempt never releases the key
// of a node that refused it as held, nor of a node whose answer was lost
// (an error or a timeout: it may hold a holder's key with the same
// value), so a second acquisition that reuses the value of a holder (a
// job's re-run that repeats its job id) fails without freeing that
// holder's lock. The price: a node whose answer was lost may keep the
// failed attempt's own key until its ttl ends, and refuses the value
// there meanwhile.
func WithValue(v string) LockOption {
	return lockOnly(func(o *lockOptions) { o.value, o.valueSet = v, true })
}

// checkValue refuses a lock value that WithValue does not accept. The
// message never quotes the value: it is a secret.
func checkValue(v string) error {
	switch {
	case len(v) < MinValueLen:
		return invalidf("lock value is %d bytes; it must be at least %d (a secret, unique to one acquisition, R4: use 20 or more bytes from a secure random source)", len(v), MinValueLen)
	case len(v) > MaxValueLen:
		return invalidf("lock value is %d bytes; it must be at most %d", len(v), MaxValueLen)
	}
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x21 || b > 0x7e {
			return invalidf("lock value has byte 0x%02x at position %d; it must be printable ASCII without spaces (0x21 to 0x7e)", b, i)
		}
	}
	return nil
}

// Handle is a held lock written down, so that another process can resume
// it (Client.Resume) to extend or unlock it, or release it (Client.Release).
// Lock.Handle makes one; MarshalText and ParseHandle turn it into text and
// back.
//
// Whoever knows a handle's Value can extend and release the lock: a handle
// is a secret capability, to be kept as a password is. Its String, GoString
// and LogValue leave the value out, so that printing a Handle with %v, %+v
// or %#v, or logging it with log/slog, shows where the lock is but not how
// to release it; MarshalText (and so encoding/json) is the one way to the
// secret form. A handle whose value was forged or guessed wrong releases
// and extends nothing: every node compares the value before it deletes or
// extends a key (R5, R17).
type Handle struct {
	// Resource is the name of the locked resource, or for a lock on a set
	// of resources (Client.LockAll) their names, sorted, joined by ","
	// (as Lock.Resource).
	Resource string
	// Resources lists the locked resources (as Lock.Resources): one
	// element, Resource, for a lock on one resource; for a set, its
	// names, sorted and distinct.
	Resources []string
	// Value is the lock's value (R4): the secret. It is empty in the
	// handle of a lock that was handed over as it was (Lock.Handle), whose
	// Resume and Release return ErrNotHeld and which MarshalText refuses.
	Value string
	// Until is the end of the lock's validity by the wall clock of the
	// machine that wrote the handle: a hint for people and for error
	// messages only, worth as much as the agreement of the two machines'
	// clocks. Resume confirms the lock on a quorum of nodes instead of
	// trusting it.
	Until time.Time
	// TTL is the lock validity time the lock was acquired or last
	// extended with (R6); Resume extends it by as much, by default.
	TTL time.Duration
	// Token is the lock's fencing token (R18), 0 without fencing.
	Token uint64
	// Extensions is how many times the lock was extended so far, counted
	// on by Resume so that WithMaxExtensions bounds a lock's extensions
	// across the processes that hold it in turn (R17). It is not trusted:
	// where the nodes are adapter.InspectNodes, the count of a lock whose
	// handle was written is also kept on the nodes (WithInfoPrefix), and
	// Resume counts on from the larger of the two.
	Extensions int
	// Shared is true for a read lock (RLock, TryRLock; Lock.Shared), which
	// Resume resumes as a read lock: its extension and release are a
	// reader's.
	Shared bool
	// KeyPrefix is the key prefix of the client that acquired the lock
	// (WithKeyPrefix): a client with another prefix refuses the handle
	// rather than look for the lock under the wrong key. It is never
	// used as the prefix: the client's own is (a handle edited to an
	// empty prefix would otherwise reach any key whose value is known).
	KeyPrefix string
	// HashTags is true when the lock's keys carry hash tags on every node
	// of the client that acquired it: a client built WithHashTags, or one
	// whose nodes are all Redis Clusters; false when only the keys on its
	// cluster nodes carry them. A client that would name the keys on one
	// of its nodes otherwise refuses the handle (a client whose nodes
	// are all clusters takes either, and so does every client a handle
	// with ClustersOnly). A handle written by a version before the
	// per-node key layout over nodes of which one was a cluster says
	// true: every node's keys were tagged, and only a client built
	// WithHashTags finds them.
	HashTags bool
	// ClustersOnly is true when every node of the client that acquired
	// the lock is a Redis Cluster, where a key is tagged whatever the
	// client's layout: the lock has no key on any plain master, so every
	// client takes the handle, with or without WithHashTags (the joint
	// list of docs/operations.md, when a plain master joins cluster
	// nodes). A handle of an earlier version says false, and is taken as
	// HashTags says.
	ClustersOnly bool
	// Nodes is the number of nodes of the client that acquired the lock.
	// Resume and Release refuse a client whose quorum is smaller than a
	// majority of them: it would confirm the lock on fewer nodes than
	// granted it (a quorum of one, over one of three nodes, would extend
	// the lock where the two others let it expire, and another client
	// would be granted it there). A client with a quorum as large confirms
	// it only where its keys are, on at least as many of the lock's nodes
	// (the joint list of a node change, docs/operations.md, takes the
	// handles of the old list; a handle written over the joint list is
	// resumed over the joint list). 0 in a handle of an earlier version,
	// which is not checked.
	Nodes int
}

// Handle returns the lock written as a Handle, for another process to
// resume (Client.Resume) or release (Client.Release). Its Until is now plus
// the validity that remains (Validity), by this machine's wall clock,
// rounded down to the millisecond. The handle holds the lock's secret
// value: see Handle. A handle is worth what the nodes hold: once the lock
// was released, expired or lost, Resume and Release of it return
// ErrNotHeld. The handle of a lock that Unlock handed over to a waiter of
// the same client by letting it keep the lock (WithHandoffKeep) carries
// no value: its Resume and Release return ErrNotHeld too; and a lock whose
// handle was written is never kept.
func (l *Lock) Handle() Handle {
	now := time.Now()
	l.mu.Lock()
	until, ext, value := l.until, l.extensions, l.value
	if l.passed {
		value = "" // the next holder's (handoff_release.go: keep)
	} else if l.bound != nil {
		l.bound.Store(true) // never passed on (handoff_release.go: keep)
	}
	l.mu.Unlock()
	l.crossed.Store(true) // its extensions count on the nodes (bounds.go)
	wall := now.Round(0).Add(until.Sub(now)).Truncate(time.Millisecond).UTC()
	return Handle{
		Resource:     l.resource,
		Resources:    l.Resources(),
		Value:        value,
		Until:        wall,
		TTL:          l.ttl,
		Token:        l.token,
		Extensions:   ext,
		Shared:       l.Shared(),
		KeyPrefix:    l.client.opts.prefix,
		HashTags:     l.client.tagsEveryNode(),
		ClustersOnly: l.client.clustersOnly(),
		Nodes:        len(l.client.nodes),
	}
}

// handleWire is the JSON of a handle's text form.
type handleWire struct {
	Resource   string   `json:"resource"`
	Resources  []string `json:"resources"`
	Value      string   `json:"value"`
	Until      string   `json:"until"`
	TTL        string   `json:"ttl"`
	Token      uint64   `json:"token"`
	Extensions int      `json:"extensions"`
	Shared     bool     `json:"shared,omitempty"`
	KeyPrefix  *string  `json:"key_prefix"`
	HashTags   bool     `json:"hash_tags,omitempty"`
	// Written only when true, so that the handles of other clients stay
	// readable by earlier versions.
	ClustersOnly bool `json:"clusters_only,omitempty"`
	Nodes        int  `json:"nodes,omitempty"`
}

// MarshalText returns the handle's text form: "dlm1." followed by the
// base64url encoding (no padding) of a JSON object, one word that can be
// copied, passed in an environment variable or kept in a file. It holds
// the secret value. It refuses a handle that ParseHandle would refuse.
func (h Handle) MarshalText() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	prefix := h.KeyPrefix
	w := handleWire{
		Resource:     h.Resource,
		Resources:    h.resources(),
		Value:        h.Value,
		Until:        h.Until.UTC().Format(time.RFC3339Nano),
		TTL:          h.TTL.String(),
		Token:        h.Token,
		Extensions:   h.Extensions,
		Shared:       h.Shared,
		KeyPrefix:    &prefix,
		HashTags:     h.HashTags,
		ClustersOnly: h.ClustersOnly,
		Nodes:        h.Nodes,
	}
	js, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(handlePrefix)+base64.RawURLEncoding.EncodedLen(len(js)))
	copy(out, handlePrefix)
	base64.RawURLEncoding.Encode(out[len(handlePrefix):], js)
	return out, nil
}

// UnmarshalText reads the text form of MarshalText into h, as ParseHandle.
func (h *Handle) UnmarshalText(text []byte) error {
	got, err := ParseHandle(string(text))
	if err != nil {
		return err
	}
	*h = got
	return nil
}

// ParseHandle reads a handle from its text form (MarshalText), ignoring
// white space around it (a trailing newline from a file or a pipe). A text
// that is not a handle of this version, or a handle with a missing or
// invalid field, is refused with an error that wraps ErrInvalid and says
// what is wrong; the error never quotes the text, which holds a secret.
func ParseHandle(s string) (Handle, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, handlePrefix) {
		if v, _, ok := strings.Cut(s, "."); ok && strings.HasPrefix(v, "dlm") && len(v) > 3 {
			return Handle{}, invalidf("handle: format %q is not known to this version, which reads %q handles", v, strings.TrimSuffix(handlePrefix, "."))
		}
		return Handle{}, invalidf("handle: not a lock handle: expected a text starting with %q, as printed by `dlm acquire` or Handle.MarshalText", handlePrefix)
	}
	if len(s) == len(handlePrefix) {
		return Handle{}, invalidf("handle: empty after %q (was the handle cut when copied?)", handlePrefix)
	}
	enc := s[len(handlePrefix):]
	js, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) && len(enc)%4 == 1 && int(ce) >= len(enc)-1 {
			// No base64 text is 1 byte past a whole quantum: the last
			// byte is the start of one that was cut off.
			return Handle{}, invalidf("handle: damaged: it ends early after %q: the handle was cut short when copied", handlePrefix)
		}
		if errors.As(err, &ce) {
			return Handle{}, invalidf("handle: damaged: byte %d after %q is not base64url (was the handle cut or changed when copied?)", int64(ce), handlePrefix)
		}
		return Handle{}, invalidf("handle: damaged: not base64url after %q", handlePrefix)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var w handleWire
	if err := dec.Decode(&w); err != nil {
		return Handle{}, invalidf("handle: damaged: its content is not a handle's JSON object (%s)", jsonProblem(err))
	}
	if dec.More() {
		return Handle{}, invalidf("handle: damaged: data after the handle's JSON object")
	}
	h := Handle{Resource: w.Resource, Resources: w.Resources, Value: w.Value, Token: w.Token, Extensions: w.Extensions, Shared: w.Shared, HashTags: w.HashTags, ClustersOnly: w.ClustersOnly, Nodes: w.Nodes}
	if w.KeyPrefix == nil {
		return Handle{}, invalidf("handle: no key_prefix")
	}
	h.KeyPrefix = *w.KeyPrefix
	if w.Until == "" {
		return Handle{}, invalidf("handle: no until (the end of the validity)")
	}
	if h.Until, err = time.Parse(time.RFC3339Nano, w.Until); err != nil {
		return Handle{}, invalidf("handle: until is not an RFC 3339 time")
	}
	if w.TTL == "" {
		return Handle{}, invalidf("handle: no ttl")
	}
	if h.TTL, err = time.ParseDuration(w.TTL); err != nil {
		return Handle{}, invalidf("handle: ttl is not a duration such as 10s")
	}
	if err := h.validate(); err != nil {
		return Handle{}, err
	}
	return h, nil
}

// jsonProblem describes a JSON decoding error without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "it ends early: the handle was cut short when copied"
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s must be a %v", te.Field, te.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// The field's name, not its value: made by a newer version?
		return strings.TrimPrefix(err.Error(), "json: ") + ", which this version does not know"
	}
	return "not a JSON object"
}

// resources returns Resources, or Resource alone when it is empty.
func (h Handle) resources() []string {
	if len(h.Resources) == 0 && h.Resource != "" {
		return []string{h.Resource}
	}
	return h.Resources
}

// validate checks a handle's fields; the errors wrap ErrInvalid and never
// quote the value.
func (h Handle) validate() error {
	rs := h.resources()
	switch {
	case h.Resource == "":
		return invalidf("handle: empty resource")
	case len(rs) == 1 && rs[0] != h.Resource:
		return invalidf("handle: resources %q do not match resource %q", rs, h.Resource)
	case len(rs) > 1 && h.Shared:
		return invalidf("handle: a read lock (shared) is on one resource, got %d", len(rs))
	case len(rs) > 1:
		names, err := setNames(rs)
		switch {
		case err != nil:
			return fmt.Errorf("handle: %w", err)
		case !slices.Equal(names, rs):
			return invalidf("handle: resources %q are not sorted", rs)
		case strings.Join(names, ",") != h.Resource:
			return invalidf("handle: resource %q is not its resources %q joined by \",\"", h.Resource, rs)
		}
	}
	switch {
	case h.TTL <= 0:
		return invalidf("handle: ttl must be positive, got %v", h.TTL)
	case h.Until.IsZero():
		return invalidf("handle: no until (the end of the validity)")
	case h.Extensions < 0:
		return invalidf("handle: extensions must be 0 or more, got %d", h.Extensions)
	case h.Nodes < 0:
		return invalidf("handle: nodes must be 0 or more, got %d", h.Nodes)
	}
	if err := checkValue(h.Value); err != nil {
		return fmt.Errorf("handle: %w", err)
	}
	return nil
}

// String describes the handle without its value: the resource, the end of
// the validity by the writer's wall clock, and the token.
func (h Handle) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lock handle for %q until %s", h.Resource, h.Until.UTC().Format(time.RFC3339Nano))
	if h.Token != 0 {
		fmt.Fprintf(&b, ", token %d", h.Token)
	}
	b.WriteString(", value redacted")
	return b.String()
}

// GoString is String, so that %#v does not print the value either.
func (h Handle) GoString() string { return "redlock.Handle{" + h.String() + "}" }

// LogValue gives log/slog the handle without its value.
func (h Handle) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("resource", h.Resource), slog.Time("until", h.Until), slog.Duration("ttl", h.TTL)}
	if h.Token != 0 {
		attrs = append(attrs, slog.Uint64("token", h.Token))
	}
	return slog.GroupValue(attrs...)
}

// Resume takes over the lock written in h, acquired by this or another
// process (on one resource, or on a set by LockAll), and returns a *Lock
// that this process can Extend, Unlock and keep with WithAutoExtend, as if
// it had acquired it. The client must have
// the same key prefix (WithKeyPrefix) as the one that acquired the lock,
// and its nodes must be the same.
//
// Resume does not trust h.Until, which comes from another machine's wall
// clock: it confirms the lock by extending it (R17) with the handle's TTL
// (or that of WithTTL among opts) on every node that still holds its
// value. The lock is resumed only if a quorum confirmed within the
// validity of this extension, which then counts from this process's T1
// before the requests: Until is T1 + ttl - drift (R9), as after an Extend.
// The confirmation counts as one extension against WithMaxExtensions, on
// top of h.Extensions.
//
// A handle carries no authority the client does not grant: its ttl (or
// WithTTL's) must be within WithMaxTTL and within the max ttl that every
// node advertises, and no two nodes may be one server, as for a lock
// (CheckNodes; else ErrInvalid, before any request); its key prefix
// must be the client's (WithKeyPrefix), which is the one used; and where
// every node is an adapter.InspectNode, the lock's extension count and
// bound are kept on the nodes beside the lock (under WithInfoPrefix, named
// by a digest of the value), written by every extension of a lock whose
// handle was written or that was resumed: Resume counts on from the
// larger of the handle's count and the nodes', and with the least bound
// any resumption gave, so that editing the handle's count, or resuming it
// with a larger WithMaxExtensions, does not extend the lock past the
// bound. (A holder who writes to the nodes directly is not bounded by
// anything a client does.)
//
// When too many nodes no longer hold the value, Resume returns an error
// that wraps ErrNotHeld (and also ErrExpired when h.Until has passed by
// this machine's clock), and the lock is not resumed; ErrExtendFailed
// (joined with the nodes' errors) when errors or timeouts kept a quorum
// from answering, the read of the extension count included (it waits for
// a slow node as a grant does); ErrMaxExtensions at the bound; ErrInvalid
// for a bad handle or options. No error leaves anything behind in the
// client.
//
// Of opts, WithTTL, WithDriftFactor, WithAutoExtend, WithExtendInterval
// and WithMaxExtensions apply; the options of an acquisition (WithTries,
// WithRetryDelay) have no effect, and WithValue is refused. The fencing
// token of the resumed lock is h.Token, as written: the holder of the value
// is trusted with it (a lying client is not covered, see the package
// documentation).
func (c *Client) Resume(ctx context.Context, h Handle, opts ...LockOption) (*Lock, error) {
	t, err := c.handleTarget(h)
	if err != nil {
		return nil, err
	}
	o := c.opts.lock
	o.ttl = h.TTL
	o = merged(o, opts)
	if o.valueSet {
		return nil, invalidf("Resume: WithValue does not apply: the value comes from the handle")
	}
	if err := o.validate(c.opts.nodeTimeout); err != nil {
		return nil, err
	}
	if err := c.opts.checkTTL(o.ttl); err != nil {
		return nil, fmt.Errorf("handle: %w", err)
	}
	if err := c.opts.checkRetention(o.ttl); err != nil {
		return nil, err
	}
	if err := c.checkAdvertised(o.ttl); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	// The extension count and bound as the nodes keep them (bounds.go):
	// the handle's count may have been edited.
	ext, bound := h.Extensions, o.maxExtensions
	if nodes := c.infoNodes(); nodes != nil {
		st := c.readExtensions(ctx, nodes, h.Value)
		if st.read < c.quorum {
			// The count may be on the nodes that did not answer: the
			// handle's own may have been edited.
			err := fmt.Errorf("%w: the lock's extension count was read from %d of %d nodes, a quorum needs %d", ErrExtendFailed, st.read, len(nodes), c.quorum)
			if ctx.Err() != nil {
				err = errors.Join(err, ctx.Err())
			}
			return nil, h.notHeld("resume", err)
		}
		if st.known {
			ext, bound = max(ext, st.count), min(bound, st.bound)
		}
	} else if c.infoOverlap() {
		// The same lock key under another split (prefix "dlm:", resource
		// "lock:x") would otherwise escape the count the nodes keep.
		return nil, invalidf("Resume: lock key prefix %q and info key prefix %q overlap: the nodes cannot keep the lock's extension count; choose prefixes neither of which starts the other (WithKeyPrefix, WithInfoPrefix)", c.opts.prefix, c.opts.infoPrefix)
	}
	o.maxExtensions = bound // grant sets the lock's bound from o
	d := drift(o.ttl, o.driftFactor)
	l := &Lock{
		client:     c,
		resource:   t.resource,
		key:        t.key,
		keys:       t.keys,
		value:      h.Value,
		ttl:        o.ttl,
		drift:      d,
		token:      h.Token,
		maxExt:     bound,
		extensions: ext,
		// Provisional: the confirmation must succeed within the validity
		// of its own extension, which starts no earlier than now (R17).
		until: time.Now().Add(o.ttl - d),
	}
	if h.Shared {
		l.mode = modeRead // extended and released as a reader (rw.go)
	}
	l.crossed.Store(true)
	if err := l.extend(ctx, false); err != nil {
		return nil, h.notHeld("resume", err)
	}
	c.grant(l, o) // auto-extension, Done (life.go)
	if len(c.obs) > 0 {
		c.obs.Attempt(AttemptEvent{Resource: l.resource, Outcome: AttemptAcquired, Validity: l.Validity(), Token: l.token, Resumed: true})
	}
	return l, nil
}

// Release releases the lock written in h (on one resource, or on a set)
// on every node (R5, R12), from any process, without resuming it: the
// compare-and-delete of R5 deletes only keys that hold h.Value, so a
// handle with a forged or wrong value releases nothing. It returns nil
// when a quorum of nodes deleted the lock's keys; an error wrapping
// ErrNotHeld when too many nodes answered that they were gone or held
// another value (and also ErrExpired when h.Until has passed by this
// machine's clock); ErrUnlockFailed, joined with the nodes' errors, when
// errors or timeouts kept a quorum from confirming; ErrInvalid for a bad
// handle. Like Unlock, the releases are sent even when ctx is already
// done, each bounded by the release timeout, and they are announced to
// this client's waiters (WithHandoff). A Lock of this process for the
// same lock is not told: its next Extend finds it gone. Before the
// releases it keeps a release marker of the value on every node (for
// twice the handle's ttl), so that the holder's extension racing it, in
// another process, does not set the key again where the release came
// first, as it would on a node that forgot the key: that extension fails
// with ErrNotHeld (without notes on the nodes, WithInfoPrefix, no marker
// is kept). Release is not
// reported to the observers, as no lock of this client ended.
func (c *Client) Release(ctx context.Context, h Handle) error {
	t, err := c.handleTarget(h)
	if err != nil {
		return err
	}
	// The releases outlive the caller's context, as Unlock's do; the
	// wait for them does not (waitingCtx).
	wctx := waitingCtx(ctx)
	c.markReleasedFirst(wctx, h.Value, h.TTL)
	// The handle's ttl: a healthy slow node is waited for as Unlock
	// waits for it (timeout.go).
	req := adapter.Request{Key: t.key, Keys: t.keys, Value: h.Value, TTL: h.TTL}
	if h.Shared {
		req.Op = adapter.OpRRelease // a reader leaves the readers' hash (rw.go)
	}
	err = c.unlockErr(c.releaseAll(wctx, req, true))
	if err != nil && wctx.Err() != nil {
		err = errors.Join(err, wctx.Err())
	}
	if c.hand != nil {
		for _, key := range t.lockKeys() {
			c.hand.ownRelease(key, h.Value) // the key may be free: next waiter
		}
	}
	if err != nil {
		return h.notHeld("release", err)
	}
	return nil
}

// handleTarget validates h, and its key prefix against the client's, and
// returns what it locks: one resource, or a set (multi.go), for which
// every node must be an adapter.MultiNode.
func (c *Client) handleTarget(h Handle) (target, error) {
	if h.Value == "" && h.Resource != "" {
		// Lock.Handle of a lock handed over as it was: spent.
		return target{}, h.notHeld("use", fmt.Errorf("%w: the handle carries no value: its lock was unlocked and handed over to another Lock call of its client", ErrNotHeld))
	}
	if err := h.validate(); err != nil {
		return target{}, err
	}
	if h.KeyPrefix != c.opts.prefix {
		return target{}, invalidf("handle: written by a client with key prefix %q, and this client uses %q: give it the same WithKeyPrefix", h.KeyPrefix, c.opts.prefix)
	}
	if q := h.Nodes/2 + 1; h.Nodes > 0 && c.quorum < q {
		return target{}, invalidf("handle: its lock was acquired over %d nodes, and this client's quorum is %d of %d nodes, less than a majority (%d) of the lock's: give it the same nodes (a smaller quorum would confirm the lock where the others let it expire)",
			h.Nodes, c.quorum, len(c.nodes), q)
	}
	if err := c.sameLayout(h); err != nil {
		return target{}, err
	}
	rs := h.resources()
	if h.Shared {
		if err := c.checkRW(); err != nil {
			return target{}, err
		}
	}
	if len(rs) == 1 {
		return c.one(rs[0]), nil
	}
	if err := c.checkMulti(); err != nil {
		return target{}, err
	}
	return c.set(slices.Clone(rs)), nil
}

// notHeld words the failure of op (resume, release) on h: ErrNotHeld
// errors say whether the handle's validity has passed by this machine's
// clock, and then also wrap ErrExpired.
func (h Handle) notHeld(op string, err error) error {
	if !errors.Is(err, ErrNotHeld) {
		return fmt.Errorf("redlock: %s lock %q by handle: %w", op, h.Resource, err)
	}
	if ago := time.Since(h.Until); ago >= 0 {
		return fmt.Errorf("redlock: %s lock %q by handle: its validity ended at %s by this machine's clock (%v ago): %w",
			op, h.Resource, h.Until.UTC().Format(time.RFC3339), ago.Round(time.Millisecond), errors.Join(ErrExpired, err))
	}
	return fmt.Errorf("redlock: %s lock %q by handle: a quorum of nodes no longer holds its value (released, lost, or the value is wrong): %w", op, h.Resource, err)
}
