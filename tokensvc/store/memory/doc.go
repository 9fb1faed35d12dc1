// Package memory is the in-process backend of package store: maps behind one
// mutex. It serves unit tests and `storage: {type: memory}`; nothing survives
// a restart and it cannot be shared between replicas.
package memory
