package main

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"dlm/lockload"
)

// contStats is what the contention across processes measured.
type contStats struct {
	PerSec float64
	// ProcFairness is the busiest process's critical sections over the
	// least busy one's; WorkerFairness the same over all workers.
	ProcFairness, WorkerFairness float64
	Failed                       int64
	// Cross are the hand-offs from a holder in one process to the next
	// holder in another: from the holder's Unlock call to the next
	// holder's Lock returning, by the host's wall clock. Local are those
	// within one process.
	Cross, Local quantiles
	// Where the time of a cross-process hand-off goes, for dlm's clients
	// (from their observers; zero for the others):
	// Release: the holder's Unlock call to its return;
	// Wake: the holder's Unlock call to the start (T1) of the next
	// holder's winning attempt: the release reaching the nodes, the
	// announcement, the waiter's wake-up and its jitter, or its timed
	// retry;
	// Round: the winning attempt, T1 to its decision.
	Release, Wake, Round quantiles
	// Attempts is the mean number of attempts in the whole run per
	// critical section; a lock handed over within a process is not an
	// attempt of the waiter's (and asks no node when it is kept).
	Attempts float64
	// HoldMean is a critical section's mean hold (Lock returned to Unlock
	// called). HoldShare, LocalShare and CrossShare split the time of the
	// run's critical sections and the gaps between them: the holds, the
	// hand-offs within a process, and those across processes, as shares
	// of their sum.
	HoldMean                          time.Duration
	HoldShare, LocalShare, CrossShare float64
	// PerProc counts each process's critical sections; Turn is the mean
	// number of critical sections in a row in one process.
	PerProc []int64
	Turn    float64
	// CPU is the CPU time of all client processes during the run.
	CPU time.Duration
}

// quantiles are a p50 and a p99; N counts the samples.
type quantiles struct {
	P50, P99 time.Duration
	N        int
}

func quantilesOf(ds []time.Duration) quantiles {
	if len(ds) == 0 {
		return quantiles{}
	}
	return quantiles{P50: lockload.Quantile(ds, 0.5), P99: lockload.Quantile(ds, 0.99), N: len(ds)}
}

// holding is one critical section with its process.
type holding struct {
	proc int
	csRecord
}

// analyzeCont computes contStats from the children's results over a run of
// dur. Only critical sections granted within the run count for the rate and
// the fairness; every consecutive pair of them is a hand-off.
func analyzeCont(rs []contChildResult, dur time.Duration) contStats {
	var st contStats
	var all []holding
	var procCounts, workerCounts []int64
	var attempts int
	for i, r := range rs {
		var n int64
		for _, c := range r.Counts {
			n += c
			workerCounts = append(workerCounts, c)
		}
		procCounts = append(procCounts, n)
		st.Failed += r.Failed
		st.CPU += r.CPU
		for _, a := range r.Attempts {
			if !a.Handed {
				attempts++
			}
		}
		for _, c := range r.CS {
			all = append(all, holding{i, c})
		}
		slices.SortFunc(r.Attempts, func(a, b attemptRecord) int { return cmp.Compare(a.At, b.At) })
	}
	var total int64
	for _, n := range procCounts {
		total += n
	}
	st.PerSec = float64(total) / dur.Seconds()
	st.PerProc = procCounts
	st.ProcFairness = lockload.Fairness(procCounts)
	st.WorkerFairness = lockload.Fairness(workerCounts)
	if len(all) > 0 && attempts > 0 {
		st.Attempts = float64(attempts) / float64(len(all))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Grant < all[j].Grant })
	var cross, local, rel, wake, round []time.Duration
	for i := 1; i < len(all); i++ {
		prev, next := all[i-1], all[i]
		gap := time.Duration(next.Grant - prev.Unlock)
		if prev.proc == next.proc {
			local = append(local, gap)
			continue
		}
		cross = append(cross, gap)
		rel = append(rel, time.Duration(prev.Unlocked-prev.Unlock))
		if a, ok := grantedBefore(rs[next.proc].Attempts, next.Grant); ok {
			wake = append(wake, time.Duration(a.At-int64(a.Elapsed)-prev.Unlock))
			round = append(round, a.Elapsed)
		}
	}
	st.Cross, st.Local = quantilesOf(cross), quantilesOf(local)
	var hold, localSum, crossSum time.Duration
	for _, h := range all {
		hold += time.Duration(h.Unlock - h.Grant)
	}
	for _, d := range local {
		localSum += d
	}
	for _, d := range cross {
		crossSum += d
	}
	if sum := hold + localSum + crossSum; sum > 0 {
		st.HoldMean = hold / time.Duration(len(all))
		st.HoldShare = float64(hold) / float64(sum)
		st.LocalShare = float64(localSum) / float64(sum)
		st.CrossShare = float64(crossSum) / float64(sum)
	}
	if len(all) > 0 {
		st.Turn = float64(len(all)) / float64(len(cross)+1)
	}
	st.Release = quantilesOf(rel)
	st.Wake, st.Round = quantilesOf(wake), quantilesOf(round)
	return st
}

// grantedBefore returns the last granted attempt of as (sorted by At) heard
// of at or before t.
func grantedBefore(as []attemptRecord, t int64) (attemptRecord, bool) {
	i := sort.Search(len(as), func(i int) bool { return as[i].At > t })
	for i--; i >= 0; i-- {
		if as[i].Granted {
			return as[i], true
		}
	}
	return attemptRecord{}, false
}
