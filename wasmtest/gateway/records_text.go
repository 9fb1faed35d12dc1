package gateway

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpmesh/gateway/shared/authlog"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/wordscan"
)

// textRecords writes authorization records in log/slog's text format without building a
// slog.Record: the line a slog.TextHandler without options (other than a level) writes for
// recordAttrs's record, byte for byte (FuzzRecordHandler_TextMatchesSlog compares them).
//
// It exists for speed. Every MCP request logs one record at info, and slog's text handler
// quotes the tool's parameters (JSON text, most of the line) one rune at a time through
// strconv: ~18 µs a record, a tenth of what the local gateway adds to a request
// (BENCHMARKS.md, "Local gateway overhead"). Here runs of bytes that need no escaping are
// copied whole.
type textRecords struct {
	w    io.Writer // takes whole lines (SyncWriter)
	bufs sync.Pool // *[]byte, a line's buffer; holds nothing of a record once written
}

// write writes the authorization record rec with the host's record r: its time
// (the record's own `time` when it has a valid one), level and attributes. It reports false,
// having written nothing, when r holds an attribute kind it does not format (slog's handler
// does then).
func (t *textRecords) write(r slog.Record, rec jsontext.Value) (bool, error) {
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindFloat64:
			return true
		}
		ok = false
		return false
	})
	if !ok {
		return false, nil
	}
	bp, _ := t.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := (*bp)[:0]
	if ts := recordTime(rec, r.Time); !ts.IsZero() {
		b = append(b, "time="...)
		b = ts.Truncate(time.Millisecond).AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendTextString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendTextString(b, authlog.Message)
	for k, v := range rec.Members() {
		switch key := k.String(); key {
		case "message", "time", "level":
		default:
			b = appendTextAttr(b, jsonAttr(key, v))
		}
	}
	r.Attrs(func(a slog.Attr) bool { b = appendTextAttr(b, a); return true })
	b = append(b, '\n')
	_, err := t.w.Write(b)
	if cap(b) <= 64<<10 { // a pooled buffer never grows past one large record
		*bp = b
		t.bufs.Put(bp)
	}
	return true, err
}

// appendTextAttr appends " key=value" as slog's text handler does for the kinds write
// accepts.
func appendTextAttr(b []byte, a slog.Attr) []byte {
	b = append(b, ' ')
	b = appendTextString(b, a.Key)
	b = append(b, '=')
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		return appendTextString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	default: // KindFloat64
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	}
}

// appendTextString appends s as slog's text handler writes a string: as is when it needs no
// quoting, else as strconv.Quote writes it.
func appendTextString(b []byte, s string) []byte {
	if !textNeedsQuoting(s) {
		return append(b, s...)
	}
	return appendQuoted(b, s)
}

// textNeedsQuoting is slog's text handler's rule: a string is quoted when it is empty or holds
// a space, '=', '"', an ASCII control character, or a rune that is invalid UTF-8 (or U+FFFD),
// white space or not printable. A backslash or DEL alone does not need quoting.
func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		if i+8 <= len(s) && !mayNeedQuoting(wordscan.Load(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += n
	}
	return false
}

// appendQuoted appends strconv.Quote(s). Printable ASCII other than '"' and '\\' is copied
// in runs; '"' and '\\' get a backslash; the rest (control characters, DEL, non-ASCII) goes
// through strconv a run at a time. Cutting s at ASCII bytes does not change how strconv reads
// the rest, as an ASCII byte is never part of a multi-byte UTF-8 sequence.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		j := plainRunEnd(s, i)
		b = append(b, s[i:j]...)
		if j == len(s) {
			break
		}
		if c := s[j]; c == '"' || c == '\\' {
			b = append(b, '\\', c)
			i = j + 1
			continue
		}
		k := j + 1
		for k < len(s) && !plainQuoted(s[k]) && s[k] != '"' && s[k] != '\\' {
			k++
		}
		n := len(b)
		b = strconv.AppendQuote(b, s[j:k])
		// drop the quotes strconv put around the run
		b = append(b[:n], b[n+1:len(b)-1]...)
		i = k
	}
	return append(b, '"')
}

// plainQuoted reports whether strconv.Quote writes c as itself.
func plainQuoted(c byte) bool { return c >= ' ' && c < 0x7f && c != '"' && c != '\\' }

// plainRunEnd is the end of the run of plainQuoted bytes at s[i:], found eight bytes at a
// time while no byte of a word is special.
func plainRunEnd(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		// bytes ≥ 0x80, < 0x20, DEL, '"', '\\'
		w := wordscan.Load(s, i)
		if w&wordscan.Highs != 0 || wordscan.Below(w, ' ')|wordscan.Byte(w, 0x7f)|wordscan.Byte(w, '"')|wordscan.Byte(w, '\\') != 0 {
			break
		}
	}
	for i < len(s) && plainQuoted(s[i]) {
		i++
	}
	return i
}

// mayNeedQuoting reports whether the eight bytes in w hold one that textNeedsQuoting reads
// one at a time: non-ASCII, a control character or space, '=' or '"'.
func mayNeedQuoting(w uint64) bool {
	return w&wordscan.Highs != 0 || wordscan.Below(w, ' '+1)|wordscan.Byte(w, '=')|wordscan.Byte(w, '"') != 0
}
