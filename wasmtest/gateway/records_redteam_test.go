package gateway

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/shared/jsontext"
)

// A record's strings come from the request (tool names, arguments, user agents): whatever
// they hold, the text log gets one line per record, and no text of a value or key reads as a
// key=value of its own.
func TestTextRecords_NoLineOrFieldInjection(t *testing.T) {
	at := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	for _, inject := range []string{
		`\n`, `\r`, `\r\n`, `\u2028`, `\u2029`, `\u0085`, `\u000b`, `\f`, `\t`, `\u0000`, `\u001b[2J`,
		`\udc00`, `\ud800`, `\u007f`, `\u00a0`, `\ufeff`, `\ufffd`, ` `, `=`, `\"`, `\\`, `\\\"`,
	} {
		fake := inject + ` fake=1 level=ERROR` + inject + `fake2=\"x\"` + inject
		for _, line := range []string{
			`{"message":"authorize check","tool":"` + fake + `","allow":true}`,
			`{"message":"authorize check","` + fake + `":"v"}`,
			`{"message":"authorize check","params":{"a":"` + fake + `"},"n":[1,"` + fake + `"]}`,
		} {
			if !IsAuthorizationRecord(line) {
				t.Fatalf("not a record: %s", line)
			}
			got, ref := textOutputs(t, line, at, slog.String("k"+decoded(inject), "v"+decoded(inject)))
			if got != ref {
				t.Errorf("%s\nfast: %q\nslog: %q", line, got, ref)
			}
			if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") || strings.ContainsAny(got, "\r\v\f\x00\x1b\u2028\u2029\u0085") {
				t.Errorf("%s: not one plain line: %q", line, got)
			}
			keys, err := textFields(strings.TrimSuffix(got, "\n"))
			if err != nil {
				t.Errorf("%s: %v: %q", line, err, got)
				continue
			}
			var want []string
			for k := range rec(line).Members() {
				want = append(want, k.String())
			}
			want = append([]string{"time", "level", "msg"}, append(want[1:], "k"+decoded(inject))...)
			if strings.Join(keys, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("%s: keys %q, want %q", line, keys, want)
			}
		}
	}
}

func rec(line string) jsontext.Value { return jsontext.Parse(line) }

func decoded(jsonEscape string) string { return jsontext.Parse(`"` + jsonEscape + `"`).String() }

// textFields reads a text-handler line back, as a log reader does: keys and values are bare
// (no space, '=' or '"') or Go-quoted; fields are separated by one space.
func textFields(line string) ([]string, error) {
	var keys []string
	token := func() (string, error) {
		if strings.HasPrefix(line, `"`) {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return "", err
			}
			line = line[len(q):]
			return strconv.Unquote(q)
		}
		i := strings.IndexAny(line, " =\"")
		if i < 0 {
			i = len(line)
		}
		tok := line[:i]
		line = line[i:]
		return tok, nil
	}
	for line != "" {
		k, err := token()
		if err != nil {
			return keys, err
		}
		if !strings.HasPrefix(line, "=") {
			return keys, errors.New("no '=' after key " + strconv.Quote(k))
		}
		line = line[1:]
		if _, err := token(); err != nil {
			return keys, err
		}
		keys = append(keys, k)
		if line != "" {
			if line[0] != ' ' {
				return keys, errors.New("no space after the value of " + strconv.Quote(k))
			}
			line = line[1:]
		}
	}
	return keys, nil
}
