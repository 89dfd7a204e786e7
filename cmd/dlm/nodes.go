package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"dlm/redlock"
	"dlm/redlock/rueidis"
)

// nodesEnv is the environment variable that lists node URLs when --nodes is
// not given.
const nodesEnv = "DLM_NODES"

// addNodesFlag adds --nodes to cmd, filling dst.
func addNodesFlag(cmd *cobra.Command, dst *[]string) {
	cmd.Flags().StringSliceVar(dst, "nodes", nil,
		"node URLs, comma-separated: redis://[user:password@]host:port[/db], rediss://..., unix:///path (default $"+nodesEnv+")")
}

// resolveNodes returns the node URLs from --nodes, else from $DLM_NODES, and
// validates them; a missing list or a bad URL is bad usage (exit 64).
func resolveNodes(flag []string) ([]string, error) {
	urls, _, err := nodeList(flag)
	return urls, err
}

// resolveParsedNodes is resolveNodes for the commands that read the nodes'
// parsed URLs (doctor, status).
func resolveParsedNodes(flag []string) ([]redlock.NodeURL, error) {
	_, parsed, err := nodeList(flag)
	return parsed, err
}

func nodeList(flag []string) ([]string, []redlock.NodeURL, error) {
	urls := flag
	if len(urls) == 0 {
		for _, u := range strings.Split(os.Getenv(nodesEnv), ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		return nil, nil, usageErrorf("no nodes: give --nodes URL,URL,... or set %s", nodesEnv)
	}
	parsed, err := redlock.ParseNodeURLs(urls)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return urls, parsed, nil
}

// dial builds the lock client every subcommand uses over urls. Invalid
// options are bad usage (exit 64).
func dial(urls []string, opts ...redlock.Option) (*redlock.Client, error) {
	c, err := rueidis.Dial(urls, opts...)
	if errors.Is(err, redlock.ErrInvalid) {
		return nil, withCode(exitUsage, err)
	}
	return c, err
}
