// Package storetest is the conformance suite every backend of package store
// passes: each operation, expiry (with injected times, never sleeping),
// atomicity of the consuming operations under concurrency, and garbage
// collection. A backend's test calls [Run] with a constructor of empty
// stores; its benchmarks call the Bench functions.
package storetest
