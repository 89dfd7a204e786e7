package prometheus_test

import (
	prom "github.com/prometheus/client_golang/prometheus"

	"dlm/redlock"
	"dlm/redlock/goredis"
	rlprom "dlm/redlock/prometheus"
)

// Export a client's metrics on a registry (serve it with promhttp).
func Example() {
	reg := prom.NewRegistry()
	obs, err := rlprom.New(reg)
	if err != nil {
		panic(err)
	}
	client, err := goredis.Dial([]string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"},
		redlock.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	// ... client.Lock, lock.Unlock ...
}
