//go:build wasip1

// Command filter is the gateway's proxy-wasm HTTP filter, built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter.wasm ./filter
//
// The exports live in filter/internal/abi; this file only connects them to the plugin. main is
// never called: the host runs _initialize (package init functions), then the proxy-wasm
// callbacks.
package main

import (
	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

func init() {
	abi.Register(func(h plugin.RootHost) abi.Root { return plugin.New(h) })
}

func main() {}
