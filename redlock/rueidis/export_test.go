package rueidis

// Queued returns how many requests wait in n's queue, not yet taken into a
// batch (tests only).
func Queued(n *Node) int {
	n.batch.mu.Lock()
	defer n.batch.mu.Unlock()
	return len(n.batch.queue)
}
