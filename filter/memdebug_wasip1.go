//go:build wasip1 && memdebug

package main

import (
	"runtime"
	"strconv"

	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

// A diagnostic build (go build -tags memdebug): at the first stream and every memdebugEvery
// streams the VM prints its
// runtime.MemStats to fd 2, before and after a forced collection (the memory test logs those
// lines). Not part of the module. Its init runs after main.go's (files initialise in name
// order), so its registration replaces the plain one.

const memdebugEvery = 10_000

type memdebugRoot struct {
	abi.Root
	n int
}

func (r *memdebugRoot) NewStream(h plugin.StreamHost) plugin.Stream {
	r.n++
	if r.n == 1 || r.n%memdebugEvery == 0 {
		memdebugPrint(r.n, "")
		runtime.GC()
		memdebugPrint(r.n, " after GC")
	}
	return r.Root.NewStream(h)
}

func memdebugPrint(n int, what string) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b := append([]byte("memdebug streams "), strconv.Itoa(n)...)
	b = append(b, what...)
	for _, f := range []struct {
		k string
		v uint64
	}{{"HeapAlloc", m.HeapAlloc}, {"HeapInuse", m.HeapInuse}, {"HeapIdle", m.HeapIdle}, {"HeapReleased", m.HeapReleased},
		{"HeapSys", m.HeapSys}, {"StackSys", m.StackSys}, {"MSpanSys", m.MSpanSys}, {"MCacheSys", m.MCacheSys},
		{"BuckHashSys", m.BuckHashSys}, {"GCSys", m.GCSys}, {"OtherSys", m.OtherSys}, {"Sys", m.Sys},
		{"NextGC", m.NextGC}, {"NumGC", uint64(m.NumGC)}, {"Mallocs", m.Mallocs}, {"TotalAlloc", m.TotalAlloc}} {
		b = append(b, ' ')
		b = append(b, f.k...)
		b = append(b, '=')
		b = strconv.AppendUint(b, f.v, 10)
	}
	println(string(b))
}

func init() {
	abi.Register(func(h plugin.RootHost) abi.Root { return &memdebugRoot{Root: plugin.New(h)} })
}
