package policytest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpmesh/gateway/shared/pluginconf"
)

// WriteTable writes the results as a table (case, expected, got, reasons) followed by the
// problems of each failed case and a summary line.
func WriteTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tCASE\tEXPECTED\tGOT\tREASONS")
	for _, r := range results {
		mark := "ok"
		if !r.Passed() {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, r.Case.Name, r.Case.Expect, r.Outcome, Reasons(r.Records))
	}
	_ = tw.Flush()
	failed := 0
	for _, r := range results {
		if r.Passed() {
			continue
		}
		failed++
		where := ""
		if r.Case.Line > 0 {
			where = fmt.Sprintf(" (line %d)", r.Case.Line)
		}
		fmt.Fprintf(w, "\nFAIL %s%s\n", r.Case.Name, where)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintf(w, "\n%d cases, %d passed, %d failed\n", len(results), len(results)-failed, failed)
}

// WriteJUnit writes the results as JUnit XML (one testsuite, one testcase per case), the
// format CI systems show test reports from.
func WriteJUnit(w io.Writer, suite string, results []Result, elapsed time.Duration) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	ts := testsuite{Name: suite, Tests: len(results), Time: fmt.Sprintf("%.3f", elapsed.Seconds())}
	for _, r := range results {
		tc := testcase{Name: r.Case.Name, Classname: suite, SystemOut: "expected " + r.Case.Expect.String() + ", got " + r.Outcome.String() + "; " + Reasons(r.Records)}
		if !r.Passed() {
			ts.Failures++
			tc.Failure = &failure{Message: r.Problems[0], Text: strings.Join(r.Problems, "\n")}
		}
		ts.Cases = append(ts.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(ts); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Explain says, for a result, which criteria of the route's allow and deny blocks held and
// why. It reads this from the reasons of the authorization records and the structure of the
// route's policy; it does not evaluate the policy: a criterion whose reason is not in the
// record did not decide its block (docs/policy.md) and is reported as such.
func Explain(r Result) []string {
	var out []string
	if r.Route == nil {
		return []string{"the request matched no route"}
	}
	out = append(out, fmt.Sprintf("route %s (%s)", routeName(*r.Route), r.Route.ID))
	if len(r.Records) == 0 {
		return append(out, "no authorization record: the filter answered before the policy decided ("+denial(r.Outcome, nil)+")")
	}
	for i, rec := range r.Records {
		head := "record"
		if len(r.Records) > 1 {
			head = fmt.Sprintf("record %d", i)
		}
		if rec.MCPMethod != "" {
			head += " (" + rec.MCPMethod
			if rec.MCPTool != "" {
				head += " " + rec.MCPTool
			}
			head += ")"
		}
		allowHeld := rec.Allow || len(rec.AllowWhyTrue) > 0
		out = append(out, fmt.Sprintf("%s: allow=%v deny=%v", head, rec.Allow, rec.Deny))
		seen := map[string]bool{}
		for _, l := range [][]string{rec.AllowWhyTrue, rec.AllowWhyFalse, rec.DenyWhyFalse} {
			for _, s := range l {
				seen[s] = true
			}
		}
		for _, pre := range []string{"mcp-content-type-unsupported", "mcp-session-unknown"} {
			if seen[pre] {
				out = append(out, "  refused before the policy: "+pre)
			}
		}
		rules := asList(r.Route.Policy)
		for ri, rule := range rules {
			m, _ := rule.(map[string]any)
			prefix := "  "
			if len(rules) > 1 {
				prefix = fmt.Sprintf("  rule %d ", ri)
			}
			for _, section := range []string{"allow", "deny"} {
				block, ok := m[section]
				if !ok {
					continue
				}
				verdict := "did not hold"
				if (section == "allow" && allowHeld) || (section == "deny" && rec.Deny) {
					verdict = "held"
				}
				if len(rules) > 1 {
					verdict = "(of all rules: " + verdict + ")"
				}
				out = append(out, prefix+section+": "+verdict)
				out = explainBlock(out, block, "    "+section, section == "allow", seen)
			}
		}
		if len(rules) == 0 {
			out = append(out, "  the route has no policy: it allows nothing")
		}
	}
	return out
}

func routeName(r pluginconf.Route) string {
	if r.Name != "" {
		return r.Name
	}
	return r.ID
}

var operators = map[string]bool{"and": true, "or": true, "not": true, "nor": true}

// explainBlock appends a line per criterion of block: the reason of its kind found in the
// record, and what that says of the criterion. pos is true where a holding criterion pushes
// towards allowing (allow blocks, inverted inside not and nor).
func explainBlock(out []string, block any, path string, pos bool, seen map[string]bool) []string {
	m, _ := block.(map[string]any)
	for _, op := range sortedKeys(m) {
		childPos := pos
		if op == "not" || op == "nor" {
			childPos = !pos
		}
		for i, el := range asList(m[op]) {
			em, _ := el.(map[string]any)
			p := fmt.Sprintf("%s.%s[%d]", path, op, i)
			if len(em) > 0 && allOperators(em) {
				out = explainBlock(out, em, p, childPos, seen)
				continue
			}
			for _, crit := range sortedKeys(em) {
				out = append(out, fmt.Sprintf("%s %s: %s", p, criterionText(crit, em[crit]), explainCriterion(crit, childPos, seen)))
			}
		}
	}
	return out
}

func allOperators(m map[string]any) bool {
	for k := range m {
		if !operators[k] {
			return false
		}
	}
	return true
}

func criterionText(name string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return name
	}
	return name + " " + string(b)
}

// explainCriterion reads what the record's reasons say of a criterion.
func explainCriterion(name string, pos bool, seen map[string]bool) string {
	family := strings.ReplaceAll(name, "_", "-")
	if strings.HasPrefix(name, "claim/") {
		family = "claim"
	}
	var ok, bad string
	switch family {
	case "accept":
		return "holds (always)"
	case "authenticated-user":
		ok, bad = "authenticated-user", "user-unauthenticated"
	default:
		ok, bad = family+"-ok", family+"-unauthorized"
	}
	var says []string
	if family == "mcp-tool" && seen["mcp-tool-not-a-tool-call"] {
		says = append(says, "mcp-tool-not-a-tool-call: false, the request is not a tools/call")
	}
	if family != "mcp-tool" && family != "authenticated-user" && seen["user-unauthenticated"] {
		says = append(says, "user-unauthenticated: false, no identity")
	}
	holds := func(reason string) string {
		v := (reason == ok) == pos
		if v {
			return reason + ": holds"
		}
		return reason + ": does not hold"
	}
	if seen[ok] {
		says = append(says, holds(ok))
	}
	if seen[bad] && bad != "user-unauthenticated" {
		says = append(says, holds(bad))
	} else if seen[bad] && family == "authenticated-user" {
		says = append(says, holds(bad))
	}
	if len(says) == 0 {
		return "not reported (it did not decide its block)"
	}
	return strings.Join(says, "; ")
}

func asList(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case nil:
		return nil
	}
	return []any{v}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
