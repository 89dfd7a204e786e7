# make test: the whole suite (installs redis-server and faketime when root,
# staticcheck from the Go module proxy when missing).
# make demo: the live demo on embedded nodes (nothing to install).
.PHONY: test demo bench

test:
	./scripts/test.sh

demo:
	go run ./cmd/dlm demo

bench:
	go test -run '^$$' -bench . -benchmem ./redlock/...
