package host

import (
	"encoding/binary"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// SchedulerCall is one kind of call a Go guest's scheduler makes to the host, as counted with
// Options.TraceSchedulerCalls: which import, from inside which guest exports, and for
// poll_oneoff what the guest waited for.
type SchedulerCall struct {
	// Import is "poll_oneoff" or "sched_yield".
	Import string
	// Entry names the guest exports in progress, outermost first, joined by " > " (for
	// example "proxy_on_request_body > proxy_on_memory_allocate"); "" outside any export.
	Entry string
	// Wait describes poll_oneoff's subscriptions: "clock 0" (a non-blocking poll, as
	// the Go runtime makes at every start-the-world once its poller exists), "clock > 0"
	// (the scheduler is idle until a timer), "fd" when a descriptor is subscribed, "" for
	// sched_yield.
	Wait string
}

// String formats c as "poll_oneoff[clock 0] in proxy_on_request_body".
func (c SchedulerCall) String() string {
	s := c.Import
	if c.Wait != "" {
		s += "[" + c.Wait + "]"
	}
	if c.Entry == "" {
		return s + " outside any export"
	}
	return s + " in " + c.Entry
}

// schedTrace counts scheduler calls by kind (Options.TraceSchedulerCalls).
type schedTrace struct {
	mu     sync.Mutex
	counts map[SchedulerCall]int64
}

func (t *schedTrace) add(c SchedulerCall) {
	t.mu.Lock()
	if t.counts == nil {
		t.counts = map[SchedulerCall]int64{}
	}
	t.counts[c]++
	t.mu.Unlock()
}

// SchedulerCalls returns how often each kind of scheduler call happened since the host
// started. It is empty unless Options.TraceSchedulerCalls is set.
func (h *Host) SchedulerCalls() map[SchedulerCall]int64 {
	h.sched.mu.Lock()
	defer h.sched.mu.Unlock()
	m := make(map[SchedulerCall]int64, len(h.sched.counts))
	for k, n := range h.sched.counts {
		m[k] = n
	}
	return m
}

// StartProbe is the one poll_oneoff a guest makes on purpose in proxy_on_vm_start: the filter
// asks the host once whether poll_oneoff works (a zero-timeout clock poll) before it ever
// yields to the Go scheduler (filter/internal/abi, schedulerYield). It is not a scheduler call.
var StartProbe = SchedulerCall{Import: "poll_oneoff", Entry: "proxy_on_vm_start", Wait: "clock 0"}

// WithoutStartProbe returns m without the guests' start probes (StartProbe): at most one per
// VM, so more than vms of them are kept and reported.
func WithoutStartProbe(m map[SchedulerCall]int64, vms int) map[SchedulerCall]int64 {
	out := make(map[SchedulerCall]int64, len(m))
	for k, n := range m {
		if k == StartProbe {
			if n -= int64(vms); n <= 0 {
				continue
			}
		}
		out[k] = n
	}
	return out
}

// FormatSchedulerCalls renders SchedulerCalls one kind per line, most frequent first.
func FormatSchedulerCalls(m map[SchedulerCall]int64) string {
	keys := make([]SchedulerCall, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i].String() < keys[j].String()
	})
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.FormatInt(m[k], 10) + " × " + k.String() + "\n")
	}
	return b.String()
}

// enter and leave bracket a guest export for the scheduler trace. mu must be held.
func (v *vm) enter(name string) {
	if v.host.opts.TraceSchedulerCalls {
		v.entries = append(v.entries, name)
	}
}

func (v *vm) leave() {
	if n := len(v.entries); n > 0 {
		v.entries = v.entries[:n-1]
	}
}

// traceScheduler records one scheduler call made by the running guest.
func (v *vm) traceScheduler(imp, wait string) {
	if !v.host.opts.TraceSchedulerCalls {
		return
	}
	v.host.sched.add(SchedulerCall{Import: imp, Entry: strings.Join(v.entries, " > "), Wait: wait})
}

// pollWait classifies poll_oneoff's subscriptions (48 bytes each: userdata, tag at 8, clock
// timeout at 24) the way SchedulerCall.Wait describes them.
func (v *vm) pollWait(in, n uint32) string {
	wait := ""
	for i := uint32(0); i < n && i < 64; i++ {
		sub, ok := v.read(in+48*i, 48)
		if !ok {
			return "unreadable"
		}
		switch sub[8] {
		case 0: // clock
			if wait == "" {
				if binary.LittleEndian.Uint64(sub[24:]) == 0 {
					wait = "clock 0"
				} else {
					wait = "clock > 0"
				}
			}
		default:
			return "fd"
		}
	}
	return wait
}

func wSchedYield(v *vm, s []uint64) {
	v.traceScheduler("sched_yield", "")
	s[0] = errnoSuccess
}
