package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// newGeneralsKeygenCmd builds "dlm generals keygen": a new ed25519 identity
// for one general of a multi-machine run.
func newGeneralsKeygenCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Create a general's ed25519 key; print its public key for the cluster file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErrorf("--out is required")
			}
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			seed := base64.StdEncoding.EncodeToString(priv.Seed())
			if err := os.WriteFile(out, []byte(seed+"\n"), 0o600); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tcp.EncodeKey(pub))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the private key to (base64 seed, mode 0600)")
	return cmd
}

func readGeneralKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not a key made by dlm generals keygen", path)
	}
	return ed25519.NewKeyFromSeed(seed), nil
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
	)
	cmd := &cobra.Command{
		Use:   "node --cluster FILE --id N --key FILE --start TIME [run flags]",
		Short: "Run one general of a multi-machine run (see docs/agreement.md)",
		Long: `Run one general over TCP as part of a cluster spread over machines. Every
machine gets the same cluster file (ids, addresses, public keys), the same
run flags and the same --start time (RFC 3339; clocks must agree within
the round timeout); each runs "dlm generals node" with its own --id and
--key. The node prints its own decision; gather them to check IC1/IC2.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := generalsConfig(f)
			if err != nil {
				return withCode(exitUsage, err)
			}
			c, err := tcp.LoadCluster(cluster)
			if err != nil {
				return withCode(exitUsage, err)
			}
			priv, err := readGeneralKey(keyPath)
			if err != nil {
				return withCode(exitUsage, err)
			}
			t0, err := time.Parse(time.RFC3339Nano, start)
			if err != nil {
				return usageErrorf("--start %q: want an RFC 3339 time: %v", start, err)
			}
			node, err := tcp.Listen(c.Addr(byzantine.ID(id)), byzantine.ID(id), priv, 0)
			if err != nil {
				return err
			}
			defer node.Close()
			res, _, err := tcp.RunNode(cmd.Context(), node, cfg, priv, c, t0)
			if err != nil {
				return err
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "general %d (%s) decides %s; sent %d messages, rejected %v\n",
				res.ID, loyalLabel(res), res.Decision, res.Stats.Sent, res.Stats.Rejected)
			return nil
		},
	}
	addGeneralsRunFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&cluster, "cluster", "", "cluster file: {\"generals\":[{\"id\":0,\"addr\":\"host:port\",\"public_key\":\"base64\"},...]}")
	fl.IntVar(&id, "id", -1, "this general's id in the cluster file")
	fl.StringVar(&keyPath, "key", "", "this general's key file (dlm generals keygen)")
	fl.StringVar(&start, "start", "", "common start time of round 0, RFC 3339")
	for _, name := range []string{"cluster", "id", "key", "start"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}
