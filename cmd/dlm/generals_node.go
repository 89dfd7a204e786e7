package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// newGeneralsKeygenCmd builds "dlm generals keygen": a new ed25519 identity
// for one general of a multi-machine run.
func newGeneralsKeygenCmd() *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "keygen --out FILE [--force]",
		Short: "Create a general's ed25519 key; print its public key for the cluster file",
		Long: `Create a general's ed25519 key in --out (base64 seed, mode 0600, readable by
its owner only) and print its public key for the cluster file. An existing
file is never overwritten unless --force is given; with --force the new key
replaces it atomically, still with mode 0600.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("--out is required")
			}
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			seed := base64.StdEncoding.EncodeToString(priv.Seed())
			if err := writePrivateKey(out, []byte(seed+"\n"), force); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tcp.EncodeKey(pub))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the private key to (base64 seed, mode 0600)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing --out file")
	return cmd
}

// writePrivateKey writes data to path with mode 0600. Without force an
// existing file is a usage error; with force the file is replaced through
// a new 0600 file renamed over it, so the old mode never carries over.
func writePrivateKey(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return usageErrorf("%s exists: not overwriting a key (use --force to replace it)", path)
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dlm-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func readGeneralKey(path string, anyMode bool) (ed25519.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if mode := st.Mode().Perm(); mode&0o077 != 0 && !anyMode && runtime.GOOS != "windows" {
		// As ssh refuses a private key others can read: whoever reads
		// it signs as this general, and the others trust what it signs.
		return nil, fmt.Errorf("key file %s has mode %04o: users other than its owner can read or change it, and whoever reads it can sign as this general; run \"chmod 600 %s\" (dlm generals keygen writes 0600), or give --insecure-key-mode to use it anyway", path, mode, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not a key made by dlm generals keygen", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// checkNodeIdentity checks, before anything listens, that general id is in
// the cluster, that the cluster has as many generals as the run, that priv
// is the key the cluster lists for id, and that its address names a host
// (unless anyAddr); it returns the address to listen on.
func checkNodeIdentity(c tcp.Cluster, cfg byzantine.Config, id int, priv ed25519.PrivateKey, anyAddr bool) (string, error) {
	keys, err := c.PublicKeys()
	if err != nil {
		return "", err
	}
	if id < 0 || id >= len(keys) {
		return "", fmt.Errorf("--id %d is not in the cluster file (ids 0..%d)", id, len(keys)-1)
	}
	if len(keys) != cfg.Generals {
		return "", fmt.Errorf("the cluster file lists %d generals but -n is %d", len(keys), cfg.Generals)
	}
	if !keys[id].Equal(priv.Public()) {
		return "", fmt.Errorf("--key is not the key the cluster file lists for general %d", id)
	}
	addr := c.Addr(byzantine.ID(id))
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("general %d: address %q: %w", id, addr, err)
	}
	if ip := net.ParseIP(host); (host == "" || ip != nil && ip.IsUnspecified()) && !anyAddr {
		return "", fmt.Errorf("general %d: address %q would listen on all interfaces; give a host, or --listen-any", id, addr)
	}
	return addr, nil
}

// MaxStartAhead is how far in the future "dlm generals node" accepts a
// --start time: further than this is more likely a mistyped date than a
// plan, and the node would sit listening for it.
const MaxStartAhead = 24 * time.Hour

// checkStart refuses a start time the node cannot keep: one already past
// (round 0 would have begun without it, and a node that ran anyway would
// refuse its peers' messages as late and decide on nothing), or one more
// than MaxStartAhead away.
func checkStart(t0, now time.Time, roundTimeout time.Duration) error {
	switch {
	case t0.Before(now):
		return fmt.Errorf("--start %s is %v in the past: every general must begin round 0 at that time (rounds of %v); give a time a little in the future, the same for every general",
			t0.Format(time.RFC3339Nano), now.Sub(t0).Round(time.Millisecond), roundTimeout)
	case t0.Sub(now) > MaxStartAhead:
		return fmt.Errorf("--start %s is %v away, more than %v: check the date", t0.Format(time.RFC3339Nano), t0.Sub(now).Round(time.Second), MaxStartAhead)
	}
	return nil
}

// newGeneralsNodeCmd builds "dlm generals node": one general of a run over
// several machines, described by a cluster file.
func newGeneralsNodeCmd() *cobra.Command {
	var (
		f       generalsFlags
		cluster string
		id      int
		keyPath string
		start   string
		anyAddr bool
		// anyKeyMode accepts a key file others may read.
		anyKeyMode bool
		fi         nodeInteractiveFlags
	)
	cmd := &cobra.Command{
		Use:   "node --cluster FILE --id N --key FILE --start TIME [run flags]",
		Short: "Run one general of a multi-machine run (see docs/agreement.md)",
		Long: `Run one general over TCP as part of a cluster spread over machines. Every
machine gets the same cluster file (ids, addresses, public keys), the same
run flags and the same --start time (RFC 3339, in the future but within
24 hours; clocks must agree within the round timeout); each runs "dlm generals node" with its own --id and
--key. The run flags that make the run (--algorithm, -n, -m, --majority,
--round-timeout, --interactive, --start, --seq) are bound into the run id:
generals given other ones refuse each other's handshakes, and each names
the flag and both values ("refused general 3: it runs with other run
flags (--traitors 2 there, 1 here)"); such a general is absent from the
run, a fault like any other. The node prints its own decision; gather
them to check IC1/IC2.

With --interactive each general proposes its own private value (--value,
known to it alone) and the run is one of interactive consistency, n
instances side by side, each general the commander of its own value: the
node prints the vector it decided (entry i is general i's value as it
decided it); the loyal generals' vectors are the same, and hold each loyal
general's own value at its index. Gather the vectors to check that.

The run id, signed into every message and handshake, is derived from the
cluster file, those run flags, --start and --seq; without --seq the sequence number is
derived from --start, so every run with a new start time refuses the signed
orders of earlier runs. A key that does not match the cluster file, an id
not in it, or -n different from its size is a usage error (exit 64),
found before anything listens, as is a --start time already past. A node
that could not send a round's messages before the round's deadline says it
ran out of time and exits 3: its decision proves nothing. A peer that is
down, never connects, drops its connection or misses a round's deadline is
a fault like a lying one: the node names the faulty peers it saw, decides
and exits 0 with at most m of them, and exits 3 with more. A cluster address without a host (":7400",
"0.0.0.0:7400") would listen on all interfaces: that needs --listen-any.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fi.value != "" && !fi.on {
				return usageErrorf("--value needs --interactive")
			}
			t0, err := time.Parse(time.RFC3339Nano, start)
			if err != nil {
				return usageErrorf("--start %q: want an RFC 3339 time: %v", start, err)
			}
			if err := checkStart(t0, time.Now(), f.roundTimeout); err != nil {
				return withCode(exitUsage, err)
			}
			if !cmd.Flags().Changed("seq") {
				f.seq = uint64(t0.UnixNano()) // fresh for every start time
			}
			cfg, err := generalsConfig(f)
			if err != nil {
				return withCode(exitUsage, err)
			}
			switch {
			case len(cfg.Explain) > 1: // --explain all: this node is all it knows
				cfg.Explain = []byzantine.ID{byzantine.ID(id)}
			case len(cfg.Explain) == 1 && cfg.Explain[0] != byzantine.ID(id):
				return usageErrorf("--explain %d: a node explains only its own decisions: --explain %d (or all)", cfg.Explain[0], id)
			}
			c, err := tcp.LoadCluster(cluster)
			if err != nil {
				return withCode(exitUsage, err)
			}
			priv, err := readGeneralKey(keyPath, anyKeyMode)
			if err != nil {
				return withCode(exitUsage, err)
			}
			addr, err := checkNodeIdentity(c, cfg, id, priv, anyAddr)
			if err != nil {
				return withCode(exitUsage, err)
			}
			var ic byzantine.InteractiveConfig
			if fi.on {
				if ic, err = nodeInteractiveConfig(cfg, id, fi.value); err != nil {
					return withCode(exitUsage, err)
				}
			}
			node, err := tcp.Listen(addr, byzantine.ID(id), priv, 0)
			if err != nil {
				return err
			}
			defer node.Close()
			if fi.on {
				return runInteractiveNode(cmd.Context(), node, byzantine.ID(id), ic, priv, c, t0, f.json, cmd.OutOrStdout())
			}
			res, _, err := tcp.RunNode(cmd.Context(), node, cfg, priv, c, t0)
			if errors.Is(err, byzantine.ErrCrashed) {
				fmt.Fprintf(cmd.OutOrStdout(), "general %d crashed as asked (--crash): %v\n", id, err)
				return nil
			}
			if errors.Is(err, tcp.ErrCluster) {
				return withCode(exitUsage, err)
			}
			if err != nil {
				return withCode(exitCouldNotRun, err)
			}
			others := otherRuns(node)
			var late error
			switch faulty := res.FaultyPeers(); {
			case len(res.Overran) > 0:
				late = withCode(exitInconclusive, fmt.Errorf("general %d ran out of time in rounds %v: it sent its messages after the round's deadline, or was stopped over it, or did not take messages that had arrived in time, or could not send to a peer that stayed connected; its decision proves nothing; use a later --start or a longer --round-timeout", id, res.Overran))
			case len(faulty) > cfg.MaxTraitors:
				late = withCode(exitInconclusive, fmt.Errorf("general %d saw %d faulty generals %v (absent, gone, late, unreachable or refused), more than m = %d: agreement is guaranteed only with at most m faulty generals, so its decision proves nothing%s", id, len(faulty), faulty, cfg.MaxTraitors, otherRunsText(others)))
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return errors.Join(enc.Encode(nodeJSON{GeneralResult: res, OtherRuns: others}), late)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "general %d (%s) decides %s; sent %d messages, rejected %v\n",
				res.ID, loyalLabel(res), res.Decision, res.Stats.Sent, res.Stats.Rejected)
			if len(res.Faults) > 0 {
				var parts []string
				for _, pf := range res.Faults {
					parts = append(parts, fmt.Sprintf("%d %s from round %d", pf.ID, pf.Kind, pf.Round))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "  faulty peers seen (%d, at most m = %d tolerated): %s\n", len(res.FaultyPeers()), cfg.MaxTraitors, strings.Join(parts, ", "))
			}
			printOtherRuns(cmd.OutOrStdout(), others)
			if res.Explanation != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "  (%s)\n", pathHelp)
				for _, line := range res.Explanation.Lines() {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", line)
				}
			}
			return late
		},
	}
	addGeneralsRunFlags(cmd, &f)
	fl := cmd.Flags()
	if seq := fl.Lookup("seq"); seq != nil {
		// A node's sequence number has no fixed default: it comes from
		// --start unless given.
		seq.DefValue = "0"
		seq.Usage = "sequence number bound into the run id (signed into every message and handshake), so that an old run's messages cannot be replayed; without --seq it is derived from --start, a new one for every start time"
	}
	fl.StringVar(&cluster, "cluster", "", "cluster file: {\"generals\":[{\"id\":0,\"addr\":\"host:port\",\"public_key\":\"base64\"},...]}")
	fl.IntVar(&id, "id", -1, "this general's id in the cluster file")
	fl.StringVar(&keyPath, "key", "", "this general's key file (dlm generals keygen); refused when users other than its owner may read or change it")
	fl.BoolVar(&anyKeyMode, "insecure-key-mode", false, "use a --key file that users other than its owner may read or change (refused otherwise, as ssh refuses such a private key)")
	fl.StringVar(&start, "start", "", "common start time of round 0, RFC 3339")
	fl.BoolVar(&anyAddr, "listen-any", false, "allow a cluster address without a host, which listens on all interfaces")
	fl.BoolVar(&fi.on, "interactive", false, "run this general's part of interactive consistency: every general proposes its own --value and the loyal ones agree on the vector of all values")
	fl.StringVar(&fi.value, "value", "", "with --interactive: this general's private value (default v<id>)")
	for _, name := range []string{"cluster", "id", "key", "start"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// nodeJSON is the --json output of "dlm generals node": the general's
// result, and the peers refused for running with other run flags.
type nodeJSON struct {
	byzantine.GeneralResult
	OtherRuns []otherRun `json:"other_runs,omitempty"`
}

// otherRun is a peer whose hello proved (with its signature) that it was
// started with other run flags, another --start or another --seq: its
// connections were refused, so it is absent from this general's run.
type otherRun struct {
	ID    byzantine.ID   `json:"id"`
	Flags []tcp.TermDiff `json:"flags"`
}

// otherRuns lists the peers node refused for running with other run
// flags, in increasing order of id.
func otherRuns(node *tcp.Node) []otherRun { return otherRunsOf(node.OtherTerms()) }

// otherRunsOf lists the peers of m (tcp.Node.OtherTerms) in increasing
// order of id.
func otherRunsOf(m map[byzantine.ID][]tcp.TermDiff) []otherRun {
	var out []otherRun
	for id, d := range m {
		out = append(out, otherRun{ID: id, Flags: d})
	}
	slices.SortFunc(out, func(a, b otherRun) int { return int(a.ID - b.ID) })
	return out
}

// otherRunsText says, for an error, which peers run with which other
// flags ("" for none).
func otherRunsText(others []otherRun) string {
	var b strings.Builder
	for _, o := range others {
		fmt.Fprintf(&b, "; general %d was refused: it runs with other run flags (%s)", o.ID, tcp.DiffText(o.Flags))
	}
	return b.String()
}

// printOtherRuns prints one line per peer refused for running with other
// run flags.
func printOtherRuns(w io.Writer, others []otherRun) {
	for _, o := range others {
		fmt.Fprintf(w, "  refused general %d: it runs with other run flags (%s); every general must be given the same\n", o.ID, tcp.DiffText(o.Flags))
	}
}
