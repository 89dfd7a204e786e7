package rueidis

// Queued returns how many requests wait in n's queue, not yet taken into a
// batch (tests only).
func Queued(n *Node) int { return n.queue.Len() }
