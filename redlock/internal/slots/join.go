package slots

import (
	"errors"
	"sync"
)

// A set of resources on a node that is a Redis Cluster may span hash
// slots, and so masters: no script can step all its keys at once. The
// node then runs the set's script once per slot (Split), and Join makes
// the answers one, as the node's answer for the set:
//
//   - an acquisition is granted on the node only when every slot's script
//     set its keys; otherwise the slots that did are released again
//     (undo), so that the node holds none of the set. Each slot's step is
//     all or nothing and waits for nothing, so a set never holds part of
//     itself while it waits for the rest: no deadlock, whatever the
//     overlaps. Two clients whose overlapping sets meet on the node may
//     both be refused there (each took a slot the other needed, then let
//     it go): a lost attempt, which the retry (R10) repeats; never two
//     grants, since every key is set only when free.
//   - a release reports true when every slot's keys held the value; every
//     key that held it is deleted either way, as for one script.
//   - an extension reports true when every slot's keys held the value;
//     the slots whose keys still held it are extended even when another
//     slot's were not, so those keys may outlive the set by one ttl: a
//     delay for the next holder, never a second grant, since the node
//     answers false and the client does not count it.
//   - a raise of fences (R18 phase 2) reports true when every slot's
//     raise did; one refused on a slot may have raised the fences of the
//     others. Fences only rise, so a later grant reads a larger fence and
//     gets a larger token: tokens still increase with the grants.
//   - a fenced acquisition reads the largest fence of every slot's step.

// Join gathers the answers of the per-slot steps of one set operation,
// each received with the index of its group as tag (adapter.Receiver),
// and calls done once with the set's answer when all are in. Its methods
// are safe for concurrent use.
type Join struct {
	mu   sync.Mutex
	left int
	ok   []bool
	errs []error
	undo func(groups []int, then func())
	done func(ok bool, err error)
}

// NewJoin returns the Join of an operation split into groups steps. When
// undo is not nil (an acquisition) and the set is not granted, undo is
// called with the groups whose step succeeded, and done only once undo
// calls then: a refused set has left no key of its own on the node when
// its answer comes. undo must not block (it runs on an adapter's
// goroutine); it calls then when its releases are answered.
func NewJoin(groups int, undo func(groups []int, then func()), done func(ok bool, err error)) *Join {
	return &Join{left: groups, ok: make([]bool, groups), undo: undo, done: done}
}

// Receive records the answer of group tag (adapter.Receiver).
func (j *Join) Receive(tag int, ok bool, err error) {
	j.mu.Lock()
	j.ok[tag] = ok && err == nil
	if err != nil {
		j.errs = append(j.errs, err)
	}
	j.left--
	if j.left > 0 {
		j.mu.Unlock()
		return
	}
	all := len(j.errs) == 0
	var undo []int
	for g, ok := range j.ok {
		if ok {
			undo = append(undo, g)
		} else {
			all = false
		}
	}
	err = errors.Join(j.errs...)
	j.mu.Unlock()
	if !all && j.undo != nil && len(undo) > 0 {
		j.undo(undo, func() { j.done(false, err) })
		return
	}
	j.done(all, err)
}

// Run runs step for every one of groups at once, each on a goroutine of
// its own, and returns the set's answer as Join makes it, with the largest
// fence that a step returned (a fenced acquisition's). undo is Join's.
func Run(groups int, step func(g int) (bool, uint64, error), undo func(groups []int, then func())) (bool, uint64, error) {
	type answer struct {
		ok  bool
		err error
	}
	res := make(chan answer, 1)
	j := NewJoin(groups, undo, func(ok bool, err error) { res <- answer{ok, err} })
	var mu sync.Mutex
	var fence uint64
	for g := 0; g < groups; g++ {
		go func() {
			ok, f, err := step(g)
			mu.Lock()
			fence = max(fence, f)
			mu.Unlock()
			j.Receive(g, ok, err)
		}()
	}
	a := <-res
	mu.Lock()
	defer mu.Unlock()
	return a.ok, fence, a.err
}

// RunSplit runs step once per group of keys (Split), at once, with the
// group's keys and the fence keys at the same positions (fenceKeys may be
// nil), and joins the answers (Run). When undo is not nil (an acquisition)
// and the set is refused, undo is called, before RunSplit returns, with
// the keys of each group whose step succeeded.
func RunSplit(groups []Group, keys, fenceKeys []string, step func(keys, fenceKeys []string) (bool, uint64, error), undo func(keys []string)) (bool, uint64, error) {
	var undoAll func([]int, func())
	if undo != nil {
		undoAll = func(gs []int, then func()) {
			go func() {
				for _, g := range gs {
					undo(Pick(keys, groups[g].Idx))
				}
				then()
			}()
		}
	}
	return Run(len(groups), func(g int) (bool, uint64, error) {
		var fks []string
		if fenceKeys != nil {
			fks = Pick(fenceKeys, groups[g].Idx)
		}
		return step(Pick(keys, groups[g].Idx), fks)
	}, undoAll)
}
