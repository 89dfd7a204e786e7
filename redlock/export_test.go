package redlock

// SetPhaseHook makes c call hook between phase 1 and phase 2 of every fenced
// acquisition, so that a test can freeze a client there. Set it before the
// client is used.
func SetPhaseHook(c *Client, hook func(resource string)) { c.phaseHook = hook }
