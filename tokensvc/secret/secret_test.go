package secret

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealer_RoundTripAndPurposeBinding(t *testing.T) {
	t.Parallel()
	s, err := NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal([]byte("refresh-token"), "idp-tokens")
	if bytes.Contains(sealed, []byte("refresh-token")) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := s.Open(sealed, "idp-tokens")
	if err != nil || string(got) != "refresh-token" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := s.Open(sealed, "upstream:https://a"); !errors.Is(err, ErrUnseal) {
		t.Fatalf("Open with other purpose: err = %v, want ErrUnseal", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, "idp-tokens"); !errors.Is(err, ErrUnseal) {
		t.Fatalf("Open of tampered value: err = %v, want ErrUnseal", err)
	}
	if _, err := s.Open([]byte{1, 2}, "x"); !errors.Is(err, ErrUnseal) {
		t.Fatalf("Open of short value: err = %v", err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(s.Seal([]byte("x"), "p"), "p"); !errors.Is(err, ErrUnseal) {
		t.Fatalf("Open under another key: err = %v", err)
	}
}

func TestNewToken_UniqueAndURLSafe(t *testing.T) {
	t.Parallel()
	a, b := NewToken(), NewToken()
	if a == b || len(a) != 43 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if !bytes.Equal(Hash(a), Hash(a)) || bytes.Equal(Hash(a), Hash(b)) {
		t.Fatal("hash not deterministic or collides")
	}
	if !Equal(a, a) || Equal(a, b) {
		t.Fatal("Equal wrong")
	}
}
