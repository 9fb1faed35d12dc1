//go:build wasip1 && abi_gcstress

package abi

// Built only with -tags abi_gcstress: every proxy_on_memory_allocate collects garbage first.
func init() { gcStress = true }
