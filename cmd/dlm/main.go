// Command dlm runs commands under distributed locks, inspects and guards
// Redlock nodes, runs Byzantine agreement, the safety checker and benchmarks.
//
// Run `dlm help` for the subcommands and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
