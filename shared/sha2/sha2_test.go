package sha2

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSum256_Vectors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"two blocks (FIPS 180-2 B.2)", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
			"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"million a", strings.Repeat("a", 1000000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sum256([]byte(tt.in))
			if h := hex.EncodeToString(got[:]); h != tt.want {
				t.Errorf("Sum256 = %s, want %s", h, tt.want)
			}
		})
	}
}

func TestSum256_EveryLengthMatchesStdlib(t *testing.T) {
	msg := make([]byte, 300)
	for i := range msg {
		msg[i] = byte(i*7 + 3)
	}
	for n := range len(msg) + 1 {
		if got, want := Sum256(msg[:n]), sha256.Sum256(msg[:n]); got != want {
			t.Fatalf("length %d: Sum256 = %x, want %x", n, got, want)
		}
	}
}

func TestMAC_RFC4231(t *testing.T) {
	tests := []struct {
		name, key, data, want string // key and data in hex
	}{
		{"case 1", strings.Repeat("0b", 20), hex.EncodeToString([]byte("Hi There")),
			"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"case 2", hex.EncodeToString([]byte("Jefe")), hex.EncodeToString([]byte("what do ya want for nothing?")),
			"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{"case 6: key longer than a block", strings.Repeat("aa", 131),
			hex.EncodeToString([]byte("Test Using Larger Than Block-Size Key - Hash Key First")),
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, _ := hex.DecodeString(tt.key)
			data, _ := hex.DecodeString(tt.data)
			m := NewMAC(key)
			m.Write(data)
			if got := hex.EncodeToString(m.Sum(nil)); got != tt.want {
				t.Errorf("MAC = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMAC_ResetReuse(t *testing.T) {
	key := []byte("session key")
	m := NewMAC(key)
	for _, msg := range []string{"first", "", strings.Repeat("x", 200), "first"} {
		m.Reset()
		m.Write([]byte(msg[:len(msg)/2]))
		m.Write([]byte(msg[len(msg)/2:]))
		want := hmac.New(sha256.New, key)
		want.Write([]byte(msg))
		if got := m.Sum([]byte("prefix")); !bytes.Equal(got, want.Sum([]byte("prefix"))) {
			t.Errorf("%q: MAC after Reset = %x, want %x", msg, got, want.Sum([]byte("prefix")))
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"abc", "ab", false},
		{"", "a", false},
	}
	for _, tt := range tests {
		if got := Equal([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzSum256_MatchesStdlib(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("abc"))
	f.Add(bytes.Repeat([]byte{0xff}, 119))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Sum256(data), sha256.Sum256(data); got != want {
			t.Fatalf("Sum256 = %x, want %x", got, want)
		}
	})
}

func FuzzMAC_MatchesStdlib(f *testing.F) {
	f.Add([]byte("key"), []byte("message"), uint8(3))
	f.Add(bytes.Repeat([]byte{1}, 64), []byte(""), uint8(0))
	f.Add(bytes.Repeat([]byte{2}, 65), bytes.Repeat([]byte{3}, 200), uint8(64))
	f.Fuzz(func(t *testing.T, key, data []byte, cut uint8) {
		c := min(int(cut), len(data))
		m := NewMAC(key)
		m.Write(data[:c])
		m.Write(data[c:])
		got := m.Sum(nil)
		std := hmac.New(sha256.New, key)
		std.Write(data)
		if want := std.Sum(nil); !bytes.Equal(got, want) {
			t.Fatalf("MAC = %x, want %x", got, want)
		}
		// Reused after Reset, as the filter reuses a bundle's MAC.
		m.Reset()
		m.Write(data)
		if again := m.Sum(nil); !bytes.Equal(again, got) {
			t.Fatalf("MAC after Reset = %x, want %x", again, got)
		}
	})
}

func FuzzEqual_MatchesStdlib(f *testing.F) {
	f.Add([]byte("a"), []byte("a"))
	f.Add([]byte("a"), []byte("b"))
	f.Add([]byte(""), []byte("b"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if got, want := Equal(a, b), subtle.ConstantTimeCompare(a, b) == 1; got != want {
			t.Fatalf("Equal(%x, %x) = %v, want %v", a, b, got, want)
		}
	})
}

// The filter's uses: one MAC of a session ID, one digest of a ~1 KiB tool definition. Run
// as a wasip1 test binary under build/instr.sh to compare instruction counts with the
// standard library's.
func BenchmarkMAC_SessionID(b *testing.B) {
	m := NewMAC([]byte("0123456789abcdef0123456789abcdef"))
	id := []byte("c0ffee00-1234-4567-89ab-0123456789ab")
	var sum [Size]byte
	for b.Loop() {
		m.Reset()
		m.Write(id)
		m.Sum(sum[:0])
	}
}

func BenchmarkMAC_SessionID_Stdlib(b *testing.B) {
	m := hmac.New(sha256.New, []byte("0123456789abcdef0123456789abcdef"))
	id := []byte("c0ffee00-1234-4567-89ab-0123456789ab")
	var sum [Size]byte
	for b.Loop() {
		m.Reset()
		m.Write(id)
		m.Sum(sum[:0])
	}
}

func BenchmarkSum256_1KiB(b *testing.B) {
	msg := bytes.Repeat([]byte("x"), 1024)
	for b.Loop() {
		Sum256(msg)
	}
}

func BenchmarkSum256_1KiB_Stdlib(b *testing.B) {
	msg := bytes.Repeat([]byte("x"), 1024)
	for b.Loop() {
		sha256.Sum256(msg)
	}
}
