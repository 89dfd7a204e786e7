package batch

import "dlm/redlock/scripts"

// Sharded returns s with the scripts that announce releases in their
// sharded form (scripts.Sharded), for a node that is a Redis Cluster.
func (s Scripts) Sharded() Scripts {
	s.Publish = NewScript(scripts.Sharded(scripts.ReleasePublish))
	s.Sets.Release = NewScript(scripts.Sharded(scripts.ReleaseAll))
	return s
}
