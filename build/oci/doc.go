// Package oci builds the project's images with github.com/google/go-containerregistry,
// without a container engine: the Wasm module as a Wasm OCI artifact and as a
// Docker-compatible image with plugin.wasm (the two formats Istio's image fetcher reads,
// docs/istio.md), and the token service's image (a static binary, the CA bundle, user 65532,
// no shell). Every timestamp is the given epoch (SOURCE_DATE_EPOCH in build/cmd/oci), so the
// same inputs give the same digests.
package oci
