package batch

import (
	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Scripts are the scripts of every batched lock operation but the SET NX
// PX of an acquisition (R3): one resource's release, announced release,
// extension and transfer, and the set scripts; shared by the adapters that
// batch through a Queue, which pick a request's script with Of.
type Scripts struct {
	Release, Publish, Extend, Transfer *Script
	Sets                               SetScripts
	// Batch runs a whole batch of single-resource requests (Combined).
	Batch *Script
}

// NewScripts returns the batched scripts of redlock/scripts.
func NewScripts() Scripts {
	return Scripts{
		Release:  NewScript(scripts.Release),
		Publish:  NewScript(scripts.ReleasePublish),
		Extend:   NewScript(scripts.Extend),
		Transfer: NewScript(scripts.Transfer),
		Sets:     NewSetScripts(),
		Batch:    NewScript(scripts.Batch),
	}
}

// Of returns the script that runs op, or nil for the acquisition of one
// resource (SET NX PX).
func (s Scripts) Of(op adapter.Op) *Script {
	if op.IsMulti() {
		return s.Sets.Of(op)
	}
	switch op {
	case adapter.OpAcquire:
		return nil
	case adapter.OpExtend:
		return s.Extend
	case adapter.OpTransfer:
		return s.Transfer
	case adapter.OpReleaseAnnounce:
		return s.Publish
	}
	return s.Release // OpRelease (a Queue lets no other op in)
}

// SetScripts are the scripts of the batched operations on a set of
// resources (adapter.MultiNode: AcquireAll, ReleaseAll, ExtendAll), shared
// by the adapters that batch through a Queue.
type SetScripts struct {
	Acquire, Release, Extend *Script
}

// NewSetScripts returns the set scripts of redlock/scripts.
func NewSetScripts() SetScripts {
	return SetScripts{
		Acquire: NewScript(scripts.AcquireAll),
		Release: NewScript(scripts.ReleaseAll),
		Extend:  NewScript(scripts.ExtendAll),
	}
}

// Of returns the script that runs op, an operation on a set (op.IsMulti).
func (s SetScripts) Of(op adapter.Op) *Script {
	switch op {
	case adapter.OpAcquireAll:
		return s.Acquire
	case adapter.OpExtendAll:
		return s.Extend
	}
	return s.Release // OpReleaseAll, OpReleaseAllAnnounce
}
