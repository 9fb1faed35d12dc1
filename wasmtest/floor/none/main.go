//go:build wasip1

// Command none is the floor module that exports no callback at all, only the ABI marker and
// the allocator: a stream through it costs what the host and the benchmark's driver cost by
// themselves, so that floor/empty minus none is what the callbacks cost (wasmtest/floor).
package main

import _ "github.com/mcpmesh/gateway/wasmtest/floor/internal/guest" // the ABI marker and allocator

func main() {}
