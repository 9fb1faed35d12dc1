package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/mcpmesh/gateway/wasmtest/wasmbuild"
)

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// istioExtract reads the module out of an image by the rules of Istio's image fetcher
// (pkg/wasm/imagefetcher.go, docs/istio.md): a Docker schema-2 manifest must have
// plugin.wasm in its last layer, of the Docker layer media type; otherwise an OCI image whose
// last layer is an OCI tar+gzip layer holding plugin.wasm; otherwise the Wasm OCI artifact,
// exactly two layers, one of them the raw module.
func istioExtract(img v1.Image) ([]byte, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, errors.New("no layers")
	}
	last := layers[len(layers)-1]
	lmt, _ := last.MediaType()
	if m.MediaType == types.DockerManifestSchema2 {
		if lmt != types.DockerLayer {
			return nil, fmt.Errorf("docker: last layer is %s", lmt)
		}
		return pluginFromTarGz(last)
	}
	if lmt == types.OCILayer {
		if b, err := pluginFromTarGz(last); err == nil {
			return b, nil
		}
	}
	if len(layers) != 2 {
		return nil, fmt.Errorf("artifact: %d layers, want 2", len(layers))
	}
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt == WasmContentMediaType {
			rc, err := l.Compressed()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	return nil, errors.New("artifact: no module layer")
}

func pluginFromTarGz(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("plugin.wasm not found: %w", err)
		}
		if path.Base(h.Name) == PluginFile {
			return io.ReadAll(tr)
		}
	}
}

// files lists a single-layer image's files with their headers.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// fromLayout writes img to a layout and reads it back: the image as pushed.
func fromLayout(t *testing.T, img v1.Image) v1.Image {
	t.Helper()
	dir := t.TempDir()
	d, err := WriteLayout(dir, img)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := idx.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWasmImages_MediaTypesAndTheModule(t *testing.T) {
	module := wasmbuild.Filter(t)
	art, err := WasmArtifact(module)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(fromLayout(t, art)); err != nil {
		t.Errorf("artifact: %v", err)
	}
	dock, err := DockerWasmImage(module, epoch)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		img       v1.Image
		manifest  types.MediaType
		config    types.MediaType
		layerType []types.MediaType
	}{
		"artifact": {art, types.OCIManifestSchema1, WasmConfigMediaType, []types.MediaType{WasmConfigMediaType, WasmContentMediaType}},
		"docker":   {dock, types.DockerManifestSchema2, types.DockerConfigJSON, []types.MediaType{types.DockerLayer}},
	} {
		m, err := tc.img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != tc.manifest || m.Config.MediaType != tc.config {
			t.Errorf("%s: manifest %s config %s", name, m.MediaType, m.Config.MediaType)
		}
		var got []types.MediaType
		for _, l := range m.Layers {
			got = append(got, l.MediaType)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.layerType) {
			t.Errorf("%s: layers %v, want %v", name, got, tc.layerType)
		}
		b, err := istioExtract(tc.img)
		if err != nil {
			t.Fatalf("%s: Istio's fetcher rules refuse it: %v", name, err)
		}
		if sum(b) != sum(module) {
			t.Errorf("%s: plugin.wasm sha256 %s, module %s", name, sum(b), sum(module))
		}
	}
	// The artifact's module layer is the module itself: its digest is the module's sha256.
	m, _ := art.Manifest()
	if m.Layers[1].Digest.Hex != sum(module) {
		t.Errorf("module layer digest %s, want %s", m.Layers[1].Digest.Hex, sum(module))
	}
	if err := validate.Image(fromLayout(t, dock)); err != nil {
		t.Errorf("docker image: %v", err)
	}
	fs := files(t, dock)
	if h := fs[PluginFile]; h == nil || !h.ModTime.Equal(epoch) || len(fs) != 1 {
		t.Errorf("docker image files %v", fs)
	}
	if _, err := WasmArtifact([]byte("#!/bin/sh\necho")); err == nil {
		t.Error("a non-wasm file was packaged")
	}
}

func TestTokenServiceImage_EntrypointUserArchNoShell(t *testing.T) {
	t.Parallel()
	bin := []byte("\x7fELF static binary stand-in")
	img, err := TokenServiceImage(bin, []byte("-----BEGIN CERTIFICATE-----\n"), "arm64", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(fromLayout(t, img)); err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("media types: %s %s %v", m.MediaType, m.Config.MediaType, m.Layers)
	}
	cf, _ := img.ConfigFile()
	if fmt.Sprint(cf.Config.Entrypoint) != "[/tokensvc]" || cf.Config.User != "65532:65532" || cf.Architecture != "arm64" || cf.OS != "linux" || !cf.Created.Time.Equal(epoch) {
		t.Errorf("config: entrypoint %v user %q %s/%s created %v", cf.Config.Entrypoint, cf.Config.User, cf.OS, cf.Architecture, cf.Created)
	}
	fs := files(t, img)
	if h := fs["tokensvc"]; h == nil || h.Mode&0o111 == 0 || h.Size != int64(len(bin)) {
		t.Errorf("/tokensvc: %+v", h)
	}
	if fs["etc/ssl/certs/ca-certificates.crt"] == nil {
		t.Error("no CA bundle")
	}
	for name, h := range fs {
		if strings.HasPrefix(name, "bin") || strings.HasPrefix(name, "usr") || strings.HasSuffix(name, "sh") || strings.HasSuffix(name, "busybox") {
			t.Errorf("the image holds %s", name)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s has time %v", name, h.ModTime)
		}
	}
	if _, err := TokenServiceImage(nil, []byte("x"), "amd64", epoch); err == nil {
		t.Error("an empty binary was packaged")
	}
}

// TestImages_AreReproducible: the same inputs give the same digests; the epoch and the module
// are what change them.
func TestImages_AreReproducible(t *testing.T) {
	t.Parallel()
	module := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{1}, 1000)...)
	other := append(bytes.Clone(module), 2)
	digest := func(img v1.Image, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	if a, b := digest(WasmArtifact(module)), digest(WasmArtifact(module)); a != b {
		t.Errorf("artifact: %s then %s", a, b)
	}
	if a, b := digest(DockerWasmImage(module, epoch)), digest(DockerWasmImage(module, epoch)); a != b {
		t.Errorf("docker: %s then %s", a, b)
	}
	if a, b := digest(TokenServiceImage([]byte("bin"), []byte("ca"), "amd64", epoch)), digest(TokenServiceImage([]byte("bin"), []byte("ca"), "amd64", epoch)); a != b {
		t.Errorf("token service: %s then %s", a, b)
	}
	if digest(DockerWasmImage(module, epoch)) == digest(DockerWasmImage(module, epoch.Add(time.Second))) {
		t.Error("the epoch does not reach the docker image")
	}
	if digest(WasmArtifact(module)) == digest(WasmArtifact(other)) {
		t.Error("a different module gave the same artifact digest")
	}
}

// TestLayout_WrittenPushedAndFetchedAsIstioDoes: a layout written by WriteLayout, read back,
// pushed to a registry (in-process) and fetched by reference as Istio's fetcher does.
func TestLayout_WrittenPushedAndFetchedAsIstioDoes(t *testing.T) {
	t.Parallel()
	module := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{7}, 4096)...)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	for kind, build := range map[string]func() (v1.Image, error){
		"artifact": func() (v1.Image, error) { return WasmArtifact(module) },
		"docker":   func() (v1.Image, error) { return DockerWasmImage(module, epoch) },
	} {
		img, err := build()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		d, err := WriteLayout(dir, img)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		im, _ := idx.IndexManifest()
		if len(im.Manifests) != 1 || im.Manifests[0].Digest != d {
			t.Fatalf("%s: index %+v, want one manifest %s", kind, im.Manifests, d)
		}
		fromLayout, err := idx.Image(d)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host+"/mcp-gateway/filter-"+kind+":v1", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, fromLayout); err != nil {
			t.Fatalf("%s: push: %v", kind, err)
		}
		desc, err := remote.Get(ref)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := desc.Image()
		if err != nil {
			t.Fatal(err)
		}
		if pd, _ := pulled.Digest(); pd != d {
			t.Errorf("%s: registry digest %s, layout %s (the WasmPlugin's sha256 must be the manifest digest)", kind, pd, d)
		}
		b, err := istioExtract(pulled)
		if err != nil || !bytes.Equal(b, module) {
			t.Errorf("%s: fetched module differs (%v)", kind, err)
		}
	}
}
