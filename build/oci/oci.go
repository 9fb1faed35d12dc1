package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the Wasm OCI artifact format (the solo.io Wasm artifact specification, read
// by Istio's image fetcher).
const (
	WasmConfigMediaType  types.MediaType = "application/vnd.module.wasm.config.v1+json"
	WasmContentMediaType types.MediaType = "application/vnd.module.wasm.content.layer.v1+wasm"
)

// PluginFile is the module's name in the Docker-compatible image's layer.
const PluginFile = "plugin.wasm"

// RootID is the filter's root ID, named in the artifact's runtime configuration.
const RootID = "mcp-gateway"

// User is the token service image's user and group.
const User = "65532:65532"

// wasmRuntimeConfig is the artifact's runtime configuration.
type wasmRuntimeConfig struct {
	Type        string   `json:"type"`
	ABIVersions []string `json:"abiVersions"`
	Config      struct {
		RootIDs []string `json:"root_ids"`
	} `json:"config"`
}

// WasmArtifact is the module in the Wasm OCI artifact format: an OCI manifest whose config is
// the runtime configuration and whose two layers are that configuration and the raw module.
func WasmArtifact(module []byte) (v1.Image, error) {
	if err := checkWasm(module); err != nil {
		return nil, err
	}
	rc := wasmRuntimeConfig{Type: "envoy_proxy", ABIVersions: []string{"0.2.1"}}
	rc.Config.RootIDs = []string{RootID}
	cfg, err := json.Marshal(rc)
	if err != nil {
		return nil, err
	}
	cfgLayer := static.NewLayer(cfg, WasmConfigMediaType)
	wasmLayer := static.NewLayer(module, WasmContentMediaType)
	img := &rawImage{config: cfg, layers: map[v1.Hash]v1.Layer{}}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: WasmConfigMediaType, Size: int64(len(cfg)), Digest: sha(cfg)},
	}
	for _, l := range []struct {
		layer v1.Layer
		title string
	}{{cfgLayer, "runtime-config.json"}, {wasmLayer, "plugin.wasm"}} {
		d, _ := l.layer.Digest()
		sz, _ := l.layer.Size()
		mt, _ := l.layer.MediaType()
		img.layers[d] = l.layer
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: mt, Size: sz, Digest: d, Annotations: map[string]string{"org.opencontainers.image.title": l.title}})
	}
	if img.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(img)
}

// DockerWasmImage is the module as a Docker image (schema 2) whose single layer holds
// plugin.wasm, as `FROM scratch` + `COPY filter.wasm plugin.wasm` would build it.
func DockerWasmImage(module []byte, epoch time.Time) (v1.Image, error) {
	if err := checkWasm(module); err != nil {
		return nil, err
	}
	layer, err := tarLayer([]tarFile{{Name: PluginFile, Mode: 0o444, Data: module}}, epoch, types.DockerLayer)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "COPY filter.wasm /plugin.wasm", Comment: "mcp-gateway build/cmd/oci"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "wasip1", "wasm", v1.Time{Time: epoch}
	return mutate.ConfigFile(img, cf)
}

// TokenServiceImage is the token service's image: the static binary at /tokensvc as the
// entrypoint, the CA bundle, /etc/passwd and /etc/group naming the non-root user 65532, and
// nothing else (no shell, no package manager).
func TokenServiceImage(binary, caBundle []byte, arch string, epoch time.Time) (v1.Image, error) {
	if len(binary) == 0 || len(caBundle) == 0 {
		return nil, errors.New("oci: the token service binary and the CA bundle are required")
	}
	files := []tarFile{
		{Name: "etc/", Dir: true, Mode: 0o755},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Name: "etc/ssl/", Dir: true, Mode: 0o755},
		{Name: "etc/ssl/certs/", Dir: true, Mode: 0o755},
		{Name: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caBundle},
		{Name: "home/", Dir: true, Mode: 0o755},
		{Name: "home/nonroot/", Dir: true, Mode: 0o700, UID: 65532},
		{Name: "tmp/", Dir: true, Mode: 0o1777},
		{Name: "tokensvc", Mode: 0o755, Data: binary},
		{Name: "var/", Dir: true, Mode: 0o755},
		{Name: "var/lib/", Dir: true, Mode: 0o755},
		{Name: "var/lib/mcp-gateway/", Dir: true, Mode: 0o700, UID: 65532},
	}
	layer, err := tarLayer(files, epoch, types.OCILayer)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "mcp-gateway build/cmd/oci"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: epoch}
	cf.Config = v1.Config{
		Entrypoint: []string{"/tokensvc"},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{
			"8480/tcp": {}, "8481/tcp": {},
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "mcp-gateway token service",
			"org.opencontainers.image.description": "OAuth 2.1 authorization server and check API of the MCP gateway",
		},
	}
	return mutate.ConfigFile(img, cf)
}

func checkWasm(module []byte) error {
	if len(module) < 8 || !bytes.Equal(module[:4], []byte("\x00asm")) {
		return errors.New("oci: the module is not a WebAssembly binary")
	}
	return nil
}

func sha(b []byte) v1.Hash {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h
}

type tarFile struct {
	Name string
	Dir  bool
	Mode int64
	UID  int
	Data []byte
}

// tarLayer writes files into a gzip-compressed tar layer with fixed times, owners and
// compression, so that its digest depends on the files only.
func tarLayer(files []tarFile, epoch time.Time, mt types.MediaType) (v1.Layer, error) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: epoch, Uid: f.UID, Gid: f.UID, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		if f.Dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tb.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(mt))
}

// rawImage is an image given by its manifest, config blob and layers (the Wasm artifact,
// whose config is not a container configuration).
type rawImage struct {
	manifest []byte
	config   []byte
	layers   map[v1.Hash]v1.Layer
}

func (r *rawImage) RawConfigFile() ([]byte, error)      { return r.config, nil }
func (r *rawImage) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (r *rawImage) RawManifest() ([]byte, error)        { return r.manifest, nil }
func (r *rawImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := r.layers[h]; ok {
		return l, nil
	}
	if h == sha(r.config) {
		return static.NewLayer(r.config, WasmConfigMediaType), nil
	}
	return nil, errors.New("oci: no blob " + h.String())
}
