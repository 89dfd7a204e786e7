package batch

import (
	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

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
