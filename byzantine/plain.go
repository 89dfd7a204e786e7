package byzantine

// PlainVote is the plain majority vote of B2: every general broadcasts his
// proposal and decides the value held by more than half of the votes he
// holds (his own included). It returns false when no value has a majority,
// for example when a messenger was killed and the votes tie. B2 shows why it
// is not enough: a traitor that tells different generals different things,
// a killed messenger, or a spy that alters a message makes loyal generals
// disagree or leaves them undecided. OM and SM exist because of it.
func PlainVote(votes []Order) (Order, bool) {
	counts := make(map[Order]int, len(votes))
	for _, v := range votes {
		counts[v]++
		if 2*counts[v] > len(votes) {
			return v, true
		}
	}
	return "", false
}
