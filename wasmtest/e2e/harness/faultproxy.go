package harness

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// FaultProxy is a TCP proxy on 127.0.0.1 in front of one target (a database, a token
// service) that a test can cut, hang and restore, so that an outage is made without touching
// the shared server behind it.
type FaultProxy struct {
	target string
	addr   string

	mu      sync.Mutex
	ln      net.Listener
	mode    proxyMode
	conns   map[net.Conn]struct{}
	stopped bool
	// onResponse, if set, is called when a response starts to come back from the target;
	// when it returns true the response is dropped and both connections are closed.
	onResponse func() bool
	wg         sync.WaitGroup
}

type proxyMode int

const (
	modeForward proxyMode = iota
	modeHang              // accept, forward nothing
)

// StartFaultProxy starts a proxy to target on a free 127.0.0.1 port. It stops when the test
// ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: fault proxy: %v", err)
	}
	p := &FaultProxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

// Addr is the proxy's host:port.
func (p *FaultProxy) Addr() string { return p.addr }

// Cut closes every proxied connection and the listener: new connections are refused, as
// when the server behind is down.
func (p *FaultProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.closeConnsLocked()
}

// Hang closes every proxied connection, then accepts new ones and never answers on them,
// as a server that is up but stuck.
func (p *FaultProxy) Hang() {
	p.mu.Lock()
	p.mode = modeHang
	p.closeConnsLocked()
	p.mu.Unlock()
	p.ensureListening()
}

// OnResponse sets a hook called when a response starts to arrive from the target (after the
// target has acted on the request); when it returns true the response is dropped and both
// connections closed, as when the target crashes between its commit and its answer. nil
// removes the hook.
func (p *FaultProxy) OnResponse(hook func() bool) {
	p.mu.Lock()
	p.onResponse = hook
	p.mu.Unlock()
}

// Restore forwards again, on the same address.
func (p *FaultProxy) Restore() {
	p.mu.Lock()
	p.mode = modeForward
	p.closeConnsLocked() // hung connections end; clients reconnect
	p.mu.Unlock()
	p.ensureListening()
}

func (p *FaultProxy) ensureListening() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil || p.stopped {
		return
	}
	var ln net.Listener
	var err error
	for range 50 { // the port was ours a moment ago; wait for the kernel to release it
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		panic("harness: fault proxy cannot listen on " + p.addr + " again: " + err.Error())
	}
	p.ln = ln
	p.serve(ln)
}

func (p *FaultProxy) closeConnsLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *FaultProxy) serve(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if !p.track(c) {
				_ = c.Close()
				return
			}
			if mode == modeHang {
				continue // held open until Restore, Cut or the end of the test
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

func (p *FaultProxy) forward(c net.Conn) {
	defer p.untrack(c)
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		_ = up.Close()
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				p.mu.Lock()
				hook := p.onResponse
				p.mu.Unlock()
				if hook != nil && hook() {
					return // dropped: the caller never sees the answer
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	<-done // either side closing (or a Cut) ends both
}

func (p *FaultProxy) stop() {
	p.mu.Lock()
	p.stopped = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.closeConnsLocked()
	p.mu.Unlock()
	p.wg.Wait()
}
