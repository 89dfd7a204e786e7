package slots

// Floors maps each fence key of a set to its floor key, for the steps of a
// set split by slot (RunSplit), which pass the fence keys of their slot
// only.
type Floors map[string]string

// NewFloors pairs each fence key with its floor key: floorKeys[i] is the
// floor of fenceKeys[i].
func NewFloors(fenceKeys, floorKeys []string) Floors {
	m := make(Floors, len(fenceKeys))
	for i, k := range fenceKeys {
		m[k] = floorKeys[i]
	}
	return m
}

// Of returns the floor keys of fenceKeys, in their order.
func (f Floors) Of(fenceKeys []string) []string {
	out := make([]string, len(fenceKeys))
	for i, k := range fenceKeys {
		out[i] = f[k]
	}
	return out
}
