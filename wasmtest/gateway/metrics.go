package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/mcpmesh/gateway/wasmtest/host"
)

// Metric is a snapshot of one metric the filter defined (wasmtest/host).
type Metric = host.Metric

// MetricPrefix starts the Prometheus name of every metric the filter defines: Envoy names a
// wasm plugin's metric "wasmcustom.<name>" and its Prometheus endpoint turns that into
// envoy_wasmcustom_<name>.
const MetricPrefix = "envoy_wasmcustom_"

type metricKey struct {
	name string
	typ  host.MetricType
}

func keyOf(m Metric) metricKey { return metricKey{m.Name, m.Type} }

// addMetric adds m's counts to sum (counters and histograms; a gauge takes m's value).
func addMetric(sum, m Metric) Metric {
	sum.Name, sum.Type = m.Name, m.Type
	switch m.Type {
	case host.Counter:
		sum.Value += m.Value
	case host.Histogram:
		sum.Value, sum.Count, sum.Sum = m.Value, sum.Count+m.Count, sum.Sum+m.Sum
	default:
		sum.Value = m.Value
	}
	return sum
}

// Metrics returns the filter's metrics sorted by name: counters and histograms add up over
// the current gateway, the ones being retired and the retired ones (so that a reload never
// makes a counter go down); a gauge is the current gateway's.
func (l *Live) Metrics() []Metric {
	l.mu.Lock()
	sums := make(map[metricKey]Metric, len(l.retired))
	for k, m := range l.retired {
		if m.Type != host.Gauge {
			sums[k] = m
		}
	}
	gens := append([]*generation(nil), l.retiring...)
	l.mu.Unlock()
	for _, g := range gens {
		for _, m := range g.gw.host.Metrics() {
			if m.Type != host.Gauge {
				sums[keyOf(m)] = addMetric(sums[keyOf(m)], m)
			}
		}
	}
	for _, m := range l.Current().host.Metrics() {
		sums[keyOf(m)] = addMetric(sums[keyOf(m)], m)
	}
	out := make([]Metric, 0, len(sums))
	for _, m := range sums {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Name < out[j].Name || out[i].Name == out[j].Name && out[i].Type < out[j].Type
	})
	return out
}

// PrometheusName is the Prometheus name of a filter metric: MetricPrefix and the name, each
// character outside [a-zA-Z0-9_] replaced by '_'.
func PrometheusName(name string) string {
	return MetricPrefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// StatsTag is one of Envoy's stats_config.stats_tags: Regex is matched against the full
// stat name ("wasmcustom.<name>"); its first capture group is removed from the name and its
// second (or, without one, its first) is the tag's value.
type StatsTag struct {
	Name  string
	Regex *regexp.Regexp
}

// FilterStatsTags are the tag extraction rules docs/operations-records.md gives operators for
// the filter's per-route counters (mcp_gateway.route.<route>.…): the route, and the reason
// of deny_reason counters. The local gateway applies them as Envoy does.
func FilterStatsTags() []StatsTag {
	return []StatsTag{
		{Name: "mcp_route", Regex: regexp.MustCompile(`^wasmcustom\.mcp_gateway\.route\.(([a-z0-9_]+)\.)`)},
		{Name: "mcp_reason", Regex: regexp.MustCompile(`^wasmcustom\.mcp_gateway\.route\.deny_reason(\.([a-z0-9_]+))$`)},
	}
}

// extractTags applies tags to the stat name of a filter metric as Envoy does: it returns the
// name left and the tags found, in rule order.
func extractTags(name string, tags []StatsTag) (string, [][2]string) {
	full := "wasmcustom." + name
	var found [][2]string
	for _, t := range tags {
		m := t.Regex.FindStringSubmatchIndex(full)
		if len(m) < 4 || m[2] < 0 {
			continue
		}
		value := full[m[2]:m[3]]
		if len(m) >= 6 && m[4] >= 0 {
			value = full[m[4]:m[5]]
		}
		found = append(found, [2]string{t.Name, value})
		full = full[:m[2]] + full[m[3]:]
	}
	return strings.TrimPrefix(full, "wasmcustom."), found
}

// WritePrometheus writes ms in the Prometheus text exposition format (version 0.0.4):
// counters as counter, gauges as gauge, histograms as summary with _sum and _count only (the
// host keeps no buckets). Counter names keep the filter's names (no _total added), as Envoy's
// endpoint does, and the tags FilterStatsTags extracts become labels.
func WritePrometheus(w io.Writer, ms []Metric) error {
	type sample struct {
		labels string
		m      Metric
	}
	byName := map[string][]sample{}
	var names []string
	for _, m := range ms {
		base, tags := extractTags(m.Name, FilterStatsTags())
		n := PrometheusName(base)
		var labels strings.Builder
		for i, t := range tags {
			if i == 0 {
				labels.WriteByte('{')
			} else {
				labels.WriteByte(',')
			}
			fmt.Fprintf(&labels, "%s=%q", t[0], t[1])
		}
		if len(tags) > 0 {
			labels.WriteByte('}')
		}
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		byName[n] = append(byName[n], sample{labels.String(), m})
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	for _, n := range names {
		for i, smp := range byName[n] {
			m, l := smp.m, smp.labels
			switch m.Type {
			case host.Counter:
				if i == 0 {
					fmt.Fprintf(bw, "# TYPE %s counter\n", n)
				}
				fmt.Fprintf(bw, "%s%s %d\n", n, l, m.Value)
			case host.Gauge:
				if i == 0 {
					fmt.Fprintf(bw, "# TYPE %s gauge\n", n)
				}
				fmt.Fprintf(bw, "%s%s %d\n", n, l, m.Value)
			case host.Histogram:
				if i == 0 {
					fmt.Fprintf(bw, "# TYPE %s summary\n", n)
				}
				fmt.Fprintf(bw, "%s_sum%s %d\n%s_count%s %d\n", n, l, m.Sum, n, l, m.Count)
			}
		}
	}
	return bw.Flush()
}

// AdminHandler is the local gateway's admin listener (Envoy's admin address stands there):
// GET /metrics answers the filter's metrics in the Prometheus text format; every other path
// is 404.
func (l *Live) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_ = WritePrometheus(w, l.Metrics())
	})
	return mux
}
