//go:build wasip1 && allocprofile

package main

import (
	"runtime"
	"strconv"

	"github.com/mcpmesh/gateway/filter/internal/abi"
	"github.com/mcpmesh/gateway/filter/plugin"
)

// A diagnostic build (go build -tags allocprofile): every allocation of the guest is recorded
// (runtime.MemProfileRate = 1), and at stream allocProfileAt the VM prints each allocation
// site with its count to fd 2, one line each, for wasmtest/filtertest's TestAllocProfile to
// turn into allocations per stream. Not part of the module. Its init runs after main.go's
// (files initialise in name order: hence the file's name), so its registration replaces the
// plain one.

const allocProfileAt = 2_000

type allocProfileRoot struct {
	abi.Root
	n int
}

func (r *allocProfileRoot) NewStream(h plugin.StreamHost) plugin.Stream {
	r.n++
	if r.n == allocProfileAt {
		allocProfilePrint(r.n)
	}
	return r.Root.NewStream(h)
}

func allocProfilePrint(streams int) {
	// The profile is complete up to the last finished collection.
	runtime.GC()
	runtime.GC()
	recs := make([]runtime.MemProfileRecord, 256)
	n, ok := runtime.MemProfile(recs, true)
	for !ok {
		recs = make([]runtime.MemProfileRecord, n+64)
		n, ok = runtime.MemProfile(recs, true)
	}
	for _, rec := range recs[:n] {
		b := append([]byte("allocprofile streams="), strconv.Itoa(streams)...)
		b = append(b, " objects="...)
		b = strconv.AppendInt(b, rec.AllocObjects, 10)
		b = append(b, " bytes="...)
		b = strconv.AppendInt(b, rec.AllocBytes, 10)
		b = append(b, " at"...)
		frames := runtime.CallersFrames(rec.Stack())
		for range 8 {
			f, more := frames.Next()
			b = append(b, ' ')
			b = append(b, f.Function...)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(f.Line), 10)
			if !more {
				break
			}
		}
		println(string(b))
	}
}

func init() {
	runtime.MemProfileRate = 1
	abi.Register(func(h plugin.RootHost) abi.Root { return &allocProfileRoot{Root: plugin.New(h)} })
}
