//go:build wasip1

// Command guest is the host package's test module: a small proxy-wasm plugin whose behaviour
// is chosen per request by the "x-test" request header, and at start-up by the environment
// (GUEST_INIT_CALL) and the plugin configuration.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"unsafe"
)

func main() {}

const (
	mapReqHeaders  = 0
	mapRespHeaders = 2
	mapCallHeaders = 6
	bufReqBody     = 0
	bufRespBody    = 1
	bufCallBody    = 4
	bufVMConfig    = 6
	bufPluginConf  = 7
	cont           = 0
	pause          = 1
)

var (
	rootID      uint32
	config      string
	requests    uint32 // counter metric id
	ticks       uint32
	callStreams = map[uint32]uint32{} // call id -> stream context id
	modes       = map[uint32]string{} // stream context id -> x-test
	grown       [][]byte
)

func init() {
	switch os.Getenv("GUEST_INIT_CALL") {
	case "log":
		logf(2, "init log")
	case "define_metric":
		var id uint32
		proxyDefineMetric(0, "from_init", unsafe.Pointer(&id)) // not allowed during _initialize
	case "timer-gc":
		runtimeProbe("timer-gc") // poll_oneoff during _initialize, whatever the timing
	}
}

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

//go:wasmexport proxy_on_context_create
func onContextCreate(id, parent uint32) {
	enter()
	if parent == 0 {
		rootID = id
	}
}

//go:wasmexport proxy_on_vm_start
func onVMStart(root, size uint32) bool {
	enter()
	vmc, _ := buffer(bufVMConfig, 0, size)
	logf(2, "vm start config="+string(vmc))
	return !strings.Contains(string(vmc), "fail-start")
}

//go:wasmexport proxy_on_configure
func onConfigure(root, size uint32) bool {
	enter()
	c, _ := buffer(bufPluginConf, 0, size)
	config = string(c)
	logf(2, "configured: "+config)
	proxyDefineMetric(0, "guest_requests", unsafe.Pointer(&requests))
	proxyDefineMetric(0, "guest_ticks", unsafe.Pointer(&ticks))
	if strings.Contains(config, "tick") {
		proxySetTickPeriod(10)
	}
	return !strings.Contains(config, "fail-configure")
}

//go:wasmexport proxy_on_tick
func onTick(root uint32) {
	enter()
	proxyIncrementMetric(ticks, 1)
	logf(2, "tick")
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n uint32, eos bool) uint32 {
	enter()
	proxyIncrementMetric(requests, 1)
	mode, _ := header(mapReqHeaders, "x-test")
	modes[id] = mode
	path, _ := header(mapReqHeaders, ":path")
	switch mode {
	case "":
		logf(2, "pass "+path)
		proxyReplaceHeaderMapValue(mapReqHeaders, "x-guest", "seen")
		return cont
	case "reply":
		body := []byte("nope")
		hdrs := encodePairs([][2]string{{"x-reply", "yes"}})
		proxySendLocalResponse(403, "denied by guest", ptr(body), uint32(len(body)), ptr(hdrs), uint32(len(hdrs)), -1)
		return pause
	case "trap":
		var m map[string]int
		m["boom"] = 1 // nil map write: an unrecovered panic traps the VM
		return cont
	case "exit":
		os.Exit(3)
	case "callout", "callout-noeffective", "pause-headers":
		return dispatch(id, mode)
	case "props":
		logProps("headers")
		return cont
	case "shared":
		sharedData()
		return cont
	case "serde":
		ps, _ := pairs(mapReqHeaders)
		var b strings.Builder
		for _, kv := range ps {
			b.WriteString(kv[0] + "=" + kv[1] + ";")
		}
		logf(2, "pairs "+b.String())
		ps = append(ps, [2]string{"x-added", "1"})
		raw := encodePairs(ps)
		proxySetHeaderMapPairs(mapReqHeaders, ptr(raw), uint32(len(raw)))
		proxyRemoveHeaderMapValue(mapReqHeaders, "x-remove")
		proxyAddHeaderMapValue(mapReqHeaders, "x-multi", "b")
		var size int32
		proxyGetHeaderMapSize(mapReqHeaders, unsafe.Pointer(&size))
		logf(2, "size "+itoa(int64(size)))
		return cont
	case "metrics":
		var g, h uint32
		proxyDefineMetric(1, "guest_gauge", unsafe.Pointer(&g))
		proxyDefineMetric(2, "guest_hist", unsafe.Pointer(&h))
		proxyRecordMetric(g, 7)
		proxyIncrementMetric(g, -2)
		proxyRecordMetric(h, 40)
		proxyRecordMetric(h, 2)
		var v uint64
		st := proxyGetMetric(g, unsafe.Pointer(&v))
		st2 := proxyIncrementMetric(requests, -1)
		logf(2, "gauge "+itoa(int64(v))+" st="+itoa(int64(st))+" neg="+itoa(int64(st2)))
		return cont
	case "grow":
		grown = append(grown, make([]byte, 16<<20))
		v, _ := header(mapReqHeaders, "x-big")
		logf(2, "grown "+itoa(int64(len(v))))
		return cont
	case "timer-gc", "spike", "drop", "churn", "yield", "runtime-metrics":
		runtimeProbe(mode)
		return cont
	case "close":
		proxyCloseStream(0)
		return pause
	case "setprop":
		name, val := []byte("my_prop"), []byte("v1")
		st := proxySetProperty(ptr(name), uint32(len(name)), ptr(val), uint32(len(val)))
		got, gst := property("my_prop")
		var level uint32
		lst := proxyGetLogLevel(unsafe.Pointer(&level))
		logf(2, "setprop st="+itoa(int64(st))+" get="+string(got)+"/"+itoa(int64(gst))+" level="+itoa(int64(level))+"/"+itoa(int64(lst)))
		return cont
	case "body", "body-rewrite", "resp":
		return cont
	}
	return cont
}

func dispatch(id uint32, mode string) uint32 {
	cluster, st := header(mapReqHeaders, "x-cluster")
	if st != 0 {
		cluster = "authz"
	}
	path, st := header(mapReqHeaders, "x-call-path")
	if st != 0 {
		path = "/check"
	}
	timeout := uint32(1000)
	if t, st := header(mapReqHeaders, "x-timeout"); st == 0 {
		timeout = 0
		for _, c := range t {
			timeout = timeout*10 + uint32(c-'0')
		}
	}
	hs := [][2]string{{":method", "POST"}, {":path", path}, {":authority", "authz.local"}, {"x-from", "guest"}}
	if a, st := header(mapReqHeaders, "x-omit"); st == 0 {
		out := hs[:0]
		for _, kv := range hs {
			if kv[0] != a {
				out = append(out, kv)
			}
		}
		hs = out
	}
	raw := encodePairs(hs)
	body := []byte("check " + modes[id])
	var callID uint32
	st = proxyHTTPCall(cluster, ptr(raw), uint32(len(raw)), ptr(body), uint32(len(body)), nil, 0, timeout, unsafe.Pointer(&callID))
	if st != 0 {
		msg := []byte("http_call status " + itoa(int64(st)))
		proxySendLocalResponse(500, "", ptr(msg), uint32(len(msg)), nil, 0, -1)
		return pause
	}
	callStreams[callID] = id
	logf(2, "dispatched "+itoa(int64(callID)))
	return pause
}

//go:wasmexport proxy_on_http_call_response
func onHTTPCallResponse(root, callID, nHeaders, bodySize, nTrailers uint32) {
	enter()
	id, ok := callStreams[callID]
	delete(callStreams, callID)
	status, _ := header(mapCallHeaders, ":status")
	body, _ := buffer(bufCallBody, 0, bodySize)
	var code uint32
	var mp *byte
	var mn int32
	proxyGetStatus(unsafe.Pointer(&code), unsafe.Pointer(&mp), unsafe.Pointer(&mn))
	logf(2, "call "+itoa(int64(callID))+" root="+itoa(int64(root))+" headers="+itoa(int64(nHeaders))+
		" status="+status+" body="+string(body)+" getstatus="+itoa(int64(code))+":"+string(bytesOf(mp, mn)))
	if !ok {
		return
	}
	mode := modes[id]
	if mode != "callout-noeffective" {
		if st := proxySetEffectiveContext(id); st != 0 {
			logf(3, "stream gone "+itoa(int64(id)))
			return
		}
	}
	if nHeaders == 0 {
		msg := []byte("callout failed")
		proxySendLocalResponse(503, "callout failed", ptr(msg), uint32(len(msg)), nil, 0, -1)
		return
	}
	if mode == "callout" {
		st := proxyReplaceHeaderMapValue(mapReqHeaders, "x-callout-status", status)
		proxyReplaceHeaderMapValue(mapReqHeaders, "x-callout-body", string(body))
		logf(2, "set header status="+itoa(int64(st)))
	}
	if status == "403" {
		msg := []byte("forbidden by callout")
		proxySendLocalResponse(403, "", ptr(msg), uint32(len(msg)), nil, 0, -1)
		return
	}
	proxyContinueStream(0)
	// After continuing, Envoy no longer lets the filter touch the request headers.
	st := proxyReplaceHeaderMapValue(mapReqHeaders, "x-late", "1")
	logf(2, "late header status="+itoa(int64(st)))
}

//go:wasmexport proxy_on_request_body
func onRequestBody(id, size uint32, eos bool) uint32 {
	enter()
	mode := modes[id]
	logf(1, "req body "+itoa(int64(size))+" eos="+boolStr(eos))
	switch mode {
	case "body", "body-rewrite", "pause-headers":
		if !eos {
			return pause
		}
		b, _ := buffer(bufReqBody, 0, size)
		sum := sha256.Sum256(b)
		_, hst := header(mapReqHeaders, ":path")
		logf(2, "body len="+itoa(int64(len(b)))+" sha256="+hex.EncodeToString(sum[:])+" headers="+itoa(int64(hst)))
		if mode == "body-rewrite" {
			nb := []byte("rewritten:" + string(b[:min(len(b), 4)]))
			proxySetBufferBytes(bufReqBody, 0, size, ptr(nb), uint32(len(nb)))
		}
	}
	return cont
}

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(id, n uint32, eos bool) uint32 {
	enter()
	mode := modes[id]
	proxyAddHeaderMapValue(mapRespHeaders, "x-guest-response", "yes")
	if mode == "resp-reply" {
		msg := []byte("replaced")
		proxySendLocalResponse(502, "", ptr(msg), uint32(len(msg)), nil, 0, -1)
		return pause
	}
	if mode == "props" {
		logProps("response")
	}
	return cont
}

//go:wasmexport proxy_on_response_body
func onResponseBody(id, size uint32, eos bool) uint32 {
	enter()
	mode := modes[id]
	b, _ := buffer(bufRespBody, 0, size)
	logf(2, "resp chunk "+string(b)+" eos="+boolStr(eos))
	if mode == "resp-buffer" {
		if !eos {
			return pause
		}
		up := []byte(strings.ToUpper(string(b)))
		proxySetBufferBytes(bufRespBody, 0, size, ptr(up), uint32(len(up)))
	}
	return cont
}

//go:wasmexport proxy_on_log
func onLog(id uint32) {
	enter()
	path, st := header(mapReqHeaders, ":path")
	status, _ := header(mapRespHeaders, ":status")
	rp, pst := property("request", "path")
	logf(2, "log "+path+" st="+itoa(int64(st))+" status="+status+" prop="+string(rp)+" pst="+itoa(int64(pst)))
}

//go:wasmexport proxy_on_done
func onDone(id uint32) bool {
	enter()
	return true
}

//go:wasmexport proxy_on_delete
func onDelete(id uint32) {
	enter()
	delete(modes, id)
}

func logProps(phase string) {
	var b strings.Builder
	b.WriteString("props " + phase)
	for _, p := range [][]string{{"request", "path"}, {"request", "url_path"}, {"request", "host"},
		{"request", "method"}, {"request", "scheme"}, {"request", "protocol"}, {"request", "id"},
		{"source", "address"}, {"destination", "address"}, {"plugin_name"}, {"plugin_root_id"},
		{"plugin_vm_id"}, {"route_name"}, {"cluster_name"}, {"node", "id"}} {
		v, st := property(p...)
		b.WriteString(" " + strings.Join(p, ".") + "=")
		if st != 0 {
			b.WriteString("!" + itoa(int64(st)))
		} else {
			b.WriteString(string(v))
		}
	}
	for _, p := range [][]string{{"source", "port"}, {"request", "time"}, {"response", "code"}} {
		v, st := property(p...)
		b.WriteString(" " + strings.Join(p, ".") + "=")
		if st != 0 || len(v) != 8 {
			b.WriteString("!" + itoa(int64(st)))
			continue
		}
		n := int64(le32(v)) | int64(le32(v[4:]))<<32
		if p[1] == "time" {
			n = n / 1e18 // just prove it is a plausible timestamp (seconds since 1970 / 1e9)
		}
		b.WriteString(itoa(n))
	}
	v, st := property("connection", "mtls")
	b.WriteString(" connection.mtls=" + itoa(int64(st)) + "/" + itoa(int64(len(v))))
	if len(v) == 1 {
		b.WriteString("/" + itoa(int64(v[0])))
	}
	logf(2, b.String())
}

func sharedData() {
	var p *byte
	var n int32
	var cas uint32
	st := proxyGetSharedData("k", unsafe.Pointer(&p), unsafe.Pointer(&n), unsafe.Pointer(&cas))
	v := []byte("v1")
	s1 := proxySetSharedData("k", ptr(v), 2, 0)
	st2 := proxyGetSharedData("k", unsafe.Pointer(&p), unsafe.Pointer(&n), unsafe.Pointer(&cas))
	got := string(bytesOf(p, n))
	v2 := []byte("v2")
	s2 := proxySetSharedData("k", ptr(v2), 2, cas)
	s3 := proxySetSharedData("k", ptr(v), 2, cas) // stale token
	logf(2, "shared miss="+itoa(int64(st))+" set="+itoa(int64(s1))+" get="+itoa(int64(st2))+" val="+got+
		" cas="+itoa(int64(cas))+" casset="+itoa(int64(s2))+" stale="+itoa(int64(s3)))
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
