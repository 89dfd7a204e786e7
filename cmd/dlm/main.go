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

	"github.com/redis/go-redis/v9"
)

func main() {
	quietRedisLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietRedisLog stops go-redis from logging its connection-pool retries to
// stderr: dlm reports every node failure itself, once, in its own words.
func quietRedisLog() { redis.SetLogger(discardLog{}) }

// discardLog is a go-redis logger that drops everything.
type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}
