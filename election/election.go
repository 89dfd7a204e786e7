package election

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"dlm/redlock"
)

// Defaults of the options, as stated on each option.
const (
	// DefaultPollInterval is the default of WithPollInterval.
	DefaultPollInterval = 100 * time.Millisecond
	// ResourcePrefix starts the name of the lock resource of every
	// election: the election "db" campaigns for the resource
	// "election:db", so that it never shares a lock with `dlm lock db`;
	// `dlm lock` and `dlm acquire` refuse names with this prefix. (A
	// program that takes such a lock through redlock itself still
	// blocks the election: the prefix is the election's namespace.)
	ResourcePrefix = "election:"
	// MaxNameLen bounds the length of an election name and of a
	// candidate's identity, in bytes.
	MaxNameLen = 256
)

var (
	// ErrInvalid is wrapped by every error about bad input or
	// configuration; the message says which value is wrong and what is
	// expected. Errors from the lock client wrap redlock.ErrInvalid.
	ErrInvalid = errors.New("election: invalid argument")
	// ErrNoQuorum is returned by Leader when too few nodes answered to
	// tell whether there is a leader: fewer than a quorum (R8.3).
	ErrNoQuorum = errors.New("election: too few nodes answered to tell the leader")
)

// Option configures an Election (New).
type Option func(*options)

type options struct {
	lock []redlock.LockOption
	poll time.Duration
}

// WithLockOptions sets the options of the leadership's lock, given to
// redlock.Client.Lock at each campaign over the client's defaults: the ttl
// (how long a leader that stops extending stays leader: the failover
// bound), the retry delay, the extension interval. Default none: the
// client's settings. WithAutoExtend is always added; WithTries is
// overridden (a campaign retries until ctx ends, whatever bound the client
// or opts set), WithMaxExtensions too (a leadership renews for as long as
// the leader's process and a quorum are alive: see Leadership.Done for how
// it ends), and so is WithValue: every round of a campaign locks with a
// value of its own, 128 bits from crypto/rand (R4).
func WithLockOptions(opts ...redlock.LockOption) Option {
	return func(o *options) { o.lock = append(o.lock, opts...) }
}

// WithPollInterval sets how often Observe reads the leader. Default
// DefaultPollInterval (100ms); it must be positive.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) { o.poll = d }
}

// Election is one named election over a lock client's nodes. It is safe for
// concurrent use; it holds no state of its own beyond its settings, so any
// number of Elections of the same name, in any processes, take part in the
// same election.
type Election struct {
	client   *redlock.Client
	name     string
	resource string
	opts     options
}

// New returns the election name over client, which must have been built
// with redlock.WithFencing (the term is the fencing token) over nodes that
// implement adapter.RecordNode (redlock/goredis, redlock/rueidis,
// redlocktest.MemNode do). It refuses a nil client, a bad name (empty,
// longer than MaxNameLen bytes, not printable UTF-8) and bad options with
// an error wrapping ErrInvalid.
func New(client *redlock.Client, name string, opts ...Option) (*Election, error) {
	o := options{poll: DefaultPollInterval}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case client == nil:
		return nil, invalidf("nil lock client")
	case !client.Fencing():
		return nil, invalidf("the lock client must be built with redlock.WithFencing: the term of a leader is its fencing token")
	case o.poll <= 0:
		return nil, invalidf("poll interval must be positive, got %v", o.poll)
	}
	if err := checkText("election name", name); err != nil {
		return nil, err
	}
	return &Election{client: client, name: name, resource: ResourcePrefix + name, opts: o}, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Leader is the leader of an election as a read found it.
type Leader struct {
	// ID is the leader's identity, as given to Campaign; empty when there
	// is no leader.
	ID string
	// Term is the leader's term: its fencing token (R18), strictly greater
	// than the term of every earlier leader. When there is no leader, it
	// is the highest term granted so far as far as the nodes read know (0
	// when none ever was).
	Term uint64
}

// Campaign campaigns for the election as id and blocks until id is the
// leader, ctx ends, or the client is closed. id must be non-empty,
// printable UTF-8 of at most MaxNameLen bytes; it is public (Leader
// reports it), unlike the lock's value, which stays secret.
//
// Campaigning is acquiring the election's lock with a fencing token (the
// term), then publishing the record (term, id) on the nodes that hold the
// lock (redlock.Lock.PutRecord); only when a quorum stored the record within
// the lock's validity is id the leader. If publishing fails, the lock is
// released and the campaign goes on. ctx bounds the campaign only: once
// elected, the leadership lasts until Resign, or until it is lost (see
// Leadership.Done). A campaign that ctx ends leaves no lock key behind (the
// lock client's guarantee) and returns an error that satisfies
// errors.Is(err, ctx.Err()); the election's record key (one per election
// name and node, like the fence key, replaced by every leader) may hold its
// record, which is never reported since no lock key holds its value.
func (e *Election) Campaign(ctx context.Context, id string) (*Leadership, error) {
	if err := checkText("candidate id", id); err != nil {
		return nil, err
	}
	// WithTries(0): a bound on the tries, of the client's defaults or of
	// WithLockOptions, would end the campaign before ctx does.
	opts := append(e.leaseOptions(), redlock.WithTries(0), nil)
	for {
		// A value of its own for every round (R4), over any WithValue
		// among the options: a value used again would bind this round's
		// keys to the record of an earlier holder (Leader would report
		// it), and a late release of the earlier lock would delete them.
		opts[len(opts)-1] = redlock.WithValue(rand.Text())
		l, err := e.client.Lock(ctx, e.resource, opts...)
		if err != nil {
			return nil, fmt.Errorf("election %q: campaign of %q: %w", e.name, id, err)
		}
		term, since := l.Token(), time.Now().Truncate(time.Millisecond)
		err = l.PutRecord(ctx, formatRecord(term, since, id))
		if err == nil {
			return keepRecord(&Leadership{election: e, lock: l, id: id, term: term, since: since}), nil
		}
		// Not elected: give the lock back (bounded by the release
		// timeout, whatever ctx says) and try again.
		_ = l.Unlock(context.WithoutCancel(ctx))
		if cerr := ctx.Err(); cerr != nil || errors.Is(err, redlock.ErrInvalid) || errors.Is(err, redlock.ErrClosed) {
			return nil, fmt.Errorf("election %q: campaign of %q: %w", e.name, id, errors.Join(err, cerr))
		}
		t := time.NewTimer(redlock.DefaultRetryMin)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("election %q: campaign of %q: %w", e.name, id, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

// Leader reads the election's leader from every node at once and reports
// a leader only when a quorum of nodes (R8.3) hold the same record (term,
// id) of the current holder of the election's lock: then that candidate was
// elected with that term and held the lock on each of those nodes when it
// answered. ok is false when no record has a quorum: there is no leader, or
// a candidate is between its acquisition and its record (it is not the
// leader yet: its Campaign has not returned), or too many of the leader's
// keys were lost. The error wraps ErrNoQuorum, joined with the nodes'
// errors, when fewer than a quorum of nodes answered, or when the nodes
// that did not answer could complete a record's quorum (the answers
// cannot tell whether there is a leader).
//
// The read is not linearizable: it reports a leader that held the election
// while the read ran. A leader's own knowledge is its Leadership (Done);
// writes that must not come from a deposed leader carry its term as a
// fencing token.
func (e *Election) Leader(ctx context.Context) (Leader, bool, error) {
	st, err := e.Status(ctx)
	return st.Leader, st.OK, err
}

// leaseOptions are the options of the leadership's lock: WithLockOptions,
// then auto-extension with no bound that a leader could reach (a campaign
// is a promise to keep leading while alive; R17's bound protects locks
// from holders that forgot them, and a leader that stops extending loses
// its leadership within the ttl all the same).
func (e *Election) leaseOptions() []redlock.LockOption {
	return append(append([]redlock.LockOption(nil), e.opts.lock...), redlock.WithAutoExtend(), redlock.WithMaxExtensions(math.MaxInt))
}

// Status is an election as a read found it (Election.Status).
type Status struct {
	// Leader is the leader and its term; with OK false, no leader and the
	// highest term granted so far as far as the nodes read know.
	Leader Leader
	// OK reports whether there is a leader.
	OK bool
	// Since is when the leader was elected, by its own wall clock (to the
	// millisecond), or the zero time when there is no leader or its record
	// was written by a version of dlm that did not publish it.
	Since time.Time
}

// Status reads the election as Leader does, and also when the leader was
// elected: (leader, term, since) for a status display such as dlm status.
// The error is Leader's.
func (e *Election) Status(ctx context.Context) (Status, error) {
	reads, err := e.client.ReadRecords(ctx, e.resource)
	if err != nil {
		return Status{}, fmt.Errorf("election %q: read leader: %w", e.name, err)
	}
	q := e.client.Quorum()
	answered := 0
	var top uint64
	var errs []error
	votes := make(map[record]int, 1)
	for _, r := range reads {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Node, r.Err))
			continue
		}
		answered++
		top = max(top, r.Fence)
		if !r.OK {
			continue
		}
		if ld, ok := parseRecord(r.Record); ok {
			votes[ld]++
		}
	}
	if answered < q {
		return Status{}, fmt.Errorf("%w of election %q: %d of %d nodes answered, a quorum needs %d: %w",
			ErrNoQuorum, e.name, answered, len(reads), q, errors.Join(errs...))
	}
	most := 0
	for rec, n := range votes {
		if n >= q {
			st := Status{Leader: rec.Leader, OK: true}
			if rec.since != 0 {
				st.Since = time.UnixMilli(rec.since)
			}
			return st, nil
		}
		most = max(most, n)
	}
	if unanswered := len(reads) - answered; most > 0 && most+unanswered >= q {
		// A record that the nodes which did not answer may hold too
		// (one frozen, cut off): "no leader" would be a guess.
		return Status{}, fmt.Errorf("%w of election %q: %d of %d nodes answered, a record is held by %d, and the %d that did not answer could make it the quorum of %d: %w",
			ErrNoQuorum, e.name, answered, len(reads), most, unanswered, q, errors.Join(errs...))
	}
	return Status{Leader: Leader{Term: top}}, nil
}

// Leadership is a won election: the lock of the election held with
// auto-extension (R17), its term and the leader's identity. It is safe for
// concurrent use.
type Leadership struct {
	election *Election
	lock     *redlock.Lock
	term     uint64
	since    time.Time

	proclaim sync.Mutex // Proclaim, one at a time
	mu       sync.Mutex
	id       string // Proclaim changes it
}

// ID returns the leader's identity: Campaign's id, or the last one
// Proclaim published.
func (l *Leadership) ID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id
}

// Since returns when the leadership began, by this process's wall clock
// (to the millisecond) at the election: what Status reports to others.
func (l *Leadership) Since() time.Time { return l.since }

// Term returns the leadership's term: its fencing token (R18), strictly
// greater than the term of every earlier leader of the election. Pass it
// with every write that only the leader may make, to a store that refuses a
// term lower than one it has seen: a deposed leader that has not noticed
// (paused past its validity) is then refused.
func (l *Leadership) Term() uint64 { return l.term }

// Election returns the election won.
func (l *Leadership) Election() *Election { return l.election }

// Until returns the moment, on this process's monotonic clock, until which
// the leadership is held at least (moved by each extension).
func (l *Leadership) Until() time.Time { return l.lock.Until() }

// Done returns a channel that is closed when the leadership ends: Resign,
// or its loss, noticed as for a lock with auto-extension (an extension
// found the keys gone on too many nodes, or the validity passed without a
// successful extension, or the client was closed). Err then says why.
//
// There is no bound on the extensions of a leadership: it renews, with the
// same term and without a gap, every extension interval (ttl/3 by
// default) for as long as the leader's process runs and a quorum of nodes
// answers. It ends when they do not: a leader whose process hangs (stopped,
// or starved past the ttl) makes no extension, so its keys expire within
// the ttl and another candidate is elected; when the process runs again,
// its Done is closed at once, the validity having passed (ErrExpired). A
// leader paused past its validity may act before it notices: its term is
// what a fenced store refuses then.
func (l *Leadership) Done() <-chan struct{} { return l.lock.Done() }

// Err returns nil while the leadership is held, and afterwards why it is
// not, as redlock.Lock.Err: redlock.ErrUnlocked after Resign,
// redlock.ErrLost, redlock.ErrExpired or redlock.ErrClosed.
func (l *Leadership) Err() error { return l.lock.Err() }

// Resign gives up the leadership: it releases the election's lock on every
// node (R5), so that another candidate can be elected at once, and Done
// closes. It returns the lock's Unlock error: nil when a quorum released;
// an error wrapping redlock.ErrNotHeld when the leadership had already
// ended.
func (l *Leadership) Resign(ctx context.Context) error {
	if l == nil {
		return redlock.ErrNotHeld
	}
	return l.lock.Unlock(ctx)
}

// record is a leader's published record: its term and identity, and
// since when it leads (Unix milliseconds, 0 when unknown).
type record struct {
	Leader
	since int64
}

// formatRecord is the published record of a leader: "TERM@SINCE ID", SINCE
// in Unix milliseconds.
func formatRecord(term uint64, since time.Time, id string) string {
	return strconv.FormatUint(term, 10) + "@" + strconv.FormatInt(since.UnixMilli(), 10) + " " + id
}

// parseRecord reads a record written by formatRecord, or an earlier
// version's "TERM ID" (no since).
func parseRecord(s string) (record, bool) {
	head, id, ok := strings.Cut(s, " ")
	if !ok || id == "" {
		return record{}, false
	}
	t, at, timed := strings.Cut(head, "@")
	term, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return record{}, false
	}
	var since int64
	if timed {
		if since, err = strconv.ParseInt(at, 10, 64); err != nil || since <= 0 {
			return record{}, false
		}
	}
	return record{Leader{ID: id, Term: term}, since}, true
}

// CheckName returns an error wrapping ErrInvalid, saying what is wrong,
// when name cannot name an election (New refuses it): empty, longer than
// MaxNameLen bytes, or not printable UTF-8.
func CheckName(name string) error { return checkText("election name", name) }

// CheckID returns an error wrapping ErrInvalid, saying what is wrong, when
// id cannot be a candidate's identity (Campaign refuses it): empty, longer
// than MaxNameLen bytes, or not printable UTF-8.
func CheckID(id string) error { return checkText("candidate id", id) }

// checkText refuses an empty, overlong or unprintable name or identity.
func checkText(what, s string) error {
	switch {
	case s == "":
		return invalidf("%s is empty", what)
	case len(s) > MaxNameLen:
		return invalidf("%s is %d bytes long, at most %d allowed", what, len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return invalidf("%s %q is not valid UTF-8", what, s)
	}
	for i, r := range s {
		if !unicode.IsPrint(r) {
			return invalidf("%s %q has an unprintable character %U at byte %d: use printable characters", what, s, r, i)
		}
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
