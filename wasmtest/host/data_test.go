package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestProperties_EncodedAsEnvoy(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{PluginName: "gw", RootID: "root", VMID: "vm1", Properties: map[string][]byte{"node.id": []byte("sidecar~1")}})
	s, err := h.NewStream(testCtx(t), StreamInfo{SourceAddress: "10.0.0.7:51234", DestinationAddress: "10.0.0.1:443",
		Protocol: "HTTP/2", MTLS: true, RouteName: "r1", ClusterName: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := testCtx(t)
	if _, err := s.SendRequestHeaders(ctx, get("/a/b?x=1", "x-test", "props", "x-request-id", "rid-1"), true); err != nil {
		t.Fatal(err)
	}
	e := waitLog(t, h, "props headers")
	for _, want := range []string{"request.path=/a/b?x=1", "request.url_path=/a/b", "request.host=example.test",
		"request.method=GET", "request.scheme=http", "request.protocol=HTTP/2", "request.id=rid-1",
		"source.address=10.0.0.7:51234", "destination.address=10.0.0.1:443", "plugin_name=gw",
		"plugin_root_id=root", "plugin_vm_id=vm1", "route_name=r1", "cluster_name=c1", "node.id=sidecar~1",
		"source.port=51234", "response.code=!1", "connection.mtls=0/1/1"} {
		if !strings.Contains(e.Message, want+" ") && !strings.HasSuffix(e.Message, want) {
			t.Errorf("props %q lack %q", e.Message, want)
		}
	}
	if _, err := s.SendResponseHeaders(ctx, Headers{{":status", "201"}}, true); err != nil {
		t.Fatal(err)
	}
	// In the response path the request headers are gone, so are request.path and friends.
	e = waitLog(t, h, "props response")
	for _, want := range []string{"request.path=!1", "request.protocol=HTTP/2", "response.code=201"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("response props %q lack %q", e.Message, want)
		}
	}
}

func TestSharedData_CompareAndSwap(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "shared"), true)
	// miss NOT_FOUND, set OK, get OK, CAS set OK, stale CAS_MISMATCH (8).
	waitLog(t, h, "shared miss=1 set=0 get=0 val=v1 cas=1 casset=0 stale=8")
	if v, cas, ok := h.SharedData("k"); !ok || string(v) != "v2" || cas != 2 {
		t.Errorf("SharedData = %q %d %v", v, cas, ok)
	}
	if st := h.SetSharedData("k", []byte("x"), 1); st != StatusCASMismatch {
		t.Errorf("SetSharedData with a stale token = %v", st)
	}
}

func TestMetrics_CounterGaugeHistogram(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{})
	stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "metrics"), true)
	// A gauge decrements; a counter refuses a negative increment (BAD_ARGUMENT = 2).
	waitLog(t, h, "gauge 5 st=0 neg=2")
	for name, want := range map[string]Metric{
		"guest_requests": {Name: "guest_requests", Type: Counter, Value: 1},
		"guest_gauge":    {Name: "guest_gauge", Type: Gauge, Value: 5},
		"guest_hist":     {Name: "guest_hist", Type: Histogram, Value: 2, Count: 2, Sum: 42},
	} {
		if got, ok := h.Metric(name); !ok || got != want {
			t.Errorf("Metric(%s) = %+v, want %+v", name, got, want)
		}
	}
}

func TestTicks_ManualAndTimer(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{PluginConfig: []byte("tick"), ManualTicks: true})
	h.Tick()
	h.Tick()
	if m, _ := h.Metric("guest_ticks"); m.Value != 2 {
		t.Errorf("guest_ticks after two manual ticks = %d", m.Value)
	}
	h2 := newHost(t, Options{PluginConfig: []byte("tick")})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m, _ := h2.Metric("guest_ticks"); m.Value >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 10 ms ticker did not tick")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMemory_GrowthDuringCallbacksAndAllocation(t *testing.T) {
	t.Parallel()
	h := newHost(t, Options{BufferLimit: 16 << 20})
	before := h.MemoryBytes(0)
	big := strings.Repeat("h", 64<<10)
	if _, err := stream(t, h).SendRequestHeaders(testCtx(t), get("/", "x-test", "grow", "x-big", big), true); err != nil {
		t.Fatal(err)
	}
	waitLog(t, h, "grown 65536")
	// A large body read makes the guest allocator grow memory inside the host call.
	body := bytes.Repeat([]byte("0123456789abcdef"), 6<<16) // 6 MiB
	s := stream(t, h)
	ctx := testCtx(t)
	s.SendRequestHeaders(ctx, post("/", "x-test", "body"), false)
	r, err := s.SendRequestBody(ctx, body, true)
	if err != nil || len(r.Body) != len(body) {
		t.Fatalf("body: %d bytes, %v", len(r.Body), err)
	}
	sum := sha256.Sum256(body)
	waitLog(t, h, "sha256="+hex.EncodeToString(sum[:]))
	if after := h.MemoryBytes(0); after <= before+16<<20 {
		t.Errorf("memory %d -> %d bytes: expected growth", before, after)
	}
}
