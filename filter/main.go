//go:build wasip1

// Command filter is the gateway's proxy-wasm HTTP filter, built as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter.wasm ./filter
package main

func main() {}
