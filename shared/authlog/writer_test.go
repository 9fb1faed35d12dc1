package authlog

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/policy"
)

func TestWriter_WritesWhatAppendJSONWrites(t *testing.T) {
	t.Parallel()
	kolkata := time.FixedZone("IST", 5*3600+1800)
	base := time.Date(2026, 11, 21, 23, 59, 58, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fields := range [][]Field{SelectableFields(), DefaultFields(), {FieldMCPToolParameters, "bogus", FieldTime, FieldUser}, nil} {
		w := NewWriter(fields)
		r := blockedTool()
		var got []byte
		for i := 0; i < 2000; i++ {
			// Records within one second and across seconds (and days), with fractions
			// that have trailing zeros or none, in three zones.
			ns := []int{0, 1, 10, 100000, 120000000, 999999999, rng.IntN(1e9)}[i%7]
			r.Time = base.Add(time.Duration(i/5) * 700 * time.Millisecond).Truncate(time.Second).Add(time.Duration(ns))
			switch i % 3 {
			case 1:
				r.Time = r.Time.In(kolkata)
			case 2:
				r.Time = r.Time.In(time.Local)
			}
			want := AppendJSON([]byte("x"), r, fields)
			got = w.Append(append(got[:0], 'x'), r)
			if !bytes.Equal(got, want) {
				t.Fatalf("fields %v, time %v:\ngot  %s\nwant %s", fields, r.Time, got, want)
			}
		}
	}
}

func TestWriter_AllocationFreeWithABuffer(t *testing.T) {
	w := NewWriter(SelectableFields())
	r := blockedTool()
	buf := make([]byte, 0, 1024)
	buf = w.Append(buf, r) // formats the second
	allocs := testing.AllocsPerRun(100, func() {
		buf = w.Append(buf[:0], r)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record", allocs)
	}
}

func BenchmarkWriter(b *testing.B) {
	w := NewWriter(SelectableFields())
	r := blockedTool()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = w.Append(buf[:0], r)
	}
}

// BenchmarkWriter_Parameters1KiB is the record of a tools/call whose arguments are a string of
// about 1 KiB, as in the filter's ToolsCall1KiB benchmark, with the default fields, the
// arguments (which the defaults leave out) and the default redaction.
func BenchmarkWriter_Parameters1KiB(b *testing.B) {
	w := NewWriterOptions(append(DefaultFields(), FieldMCPToolParameters), Options{Redact: DefaultRedact()})
	r := blockedTool()
	r.MCPToolParameters = `{"text":"` + strings.Repeat("x", 950) + `"}`
	r.MCPToolParametersValidated = true
	buf := make([]byte, 0, 2048)
	if buf = w.Append(buf[:0], r); !strings.Contains(string(buf), r.MCPToolParameters) {
		b.Fatalf("the record lacks the arguments: %s", buf)
	}
	b.ReportAllocs()
	for b.Loop() {
		buf = w.Append(buf[:0], r)
	}
}

// BenchmarkWriter_FilterRecord is the record the filter writes for its ToolsCall1KiB benchmark
// request (filter/plugin/plugintest: every field its configuration lists, arguments of about
// 1 KiB that the filter has validated, a 1 KiB bound): the record of every request of the
// whole-stream benchmarks at info level.
func BenchmarkWriter_FilterRecord(b *testing.B) {
	fields := []Field{FieldRequestID, FieldUser, FieldEmail, FieldAllow, FieldAllowWhyTrue, FieldAllowWhyFalse,
		FieldDeny, FieldDenyWhyFalse, FieldMCPMethod, FieldMCPTool, FieldMCPToolParameters,
		FieldMCPProtocolVersion, FieldMCPClientName, FieldMCPClientVersion}
	w := NewWriterOptions(fields, Options{MaxParameterBytes: 1024})
	r := &Record{
		Time:      time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.UTC),
		RequestID: "0d5f6c1e-9a1b-4b8e-a0c0-5a1e2f3b4c5d",
		User:      "alice",
		Email:     "alice@example.com",
		Decision: policy.Decision{Allow: true, AllowWhyTrue: policy.Reasons(0).Add(policy.ReasonDomainOK).Add(policy.ReasonMCPToolOK),
			DenyWhyFalse: policy.Reasons(0).Add(policy.ReasonMCPToolOK)},
		MCPMethod:                  "tools/call",
		MCPTool:                    "echo",
		MCPToolParameters:          `{"text":"` + strings.Repeat("x", 950) + `"}`,
		MCPToolParametersValidated: true,
	}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		buf = w.Append(buf[:0], r)
	}
}
