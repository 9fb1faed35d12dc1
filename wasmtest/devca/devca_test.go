package devca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsure_IssuesALoopbackCertificateUnderANarrowCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	p, err := Ensure(dir, []string{"127.0.0.2", "localhost", "::1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{p.CAKey, p.Key} {
		if st, err := os.Stat(k); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", k, st.Mode().Perm(), err)
		}
	}
	if _, err := tls.LoadX509KeyPair(p.Cert, p.Key); err != nil {
		t.Fatalf("the pair does not load: %v", err)
	}
	ca := readCert(t, p.CA)
	if err := CheckNarrow(ca); err != nil {
		t.Fatalf("the new CA is not narrow: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	leaf := readCert(t, p.Cert)
	for _, name := range []string{"127.0.0.2", "localhost", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	// A second run keeps the CA (clients keep trusting it) and renews the leaf.
	p2, err := Ensure(dir, []string{"127.0.0.3"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !readCert(t, p2.CA).Equal(ca) {
		t.Fatal("the CA was replaced")
	}
	if _, err := readCert(t, p2.Cert).Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.3"}); err != nil {
		t.Fatal(err)
	}
}

// TestEnsure_CAKeyCannotVouchForOtherHosts: even with the CA's key, a certificate for a public
// name or address does not verify under the CA (the name constraints hold in clients).
func TestEnsure_CAKeyCannotVouchForOtherHosts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := Ensure(dir, []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, p.CA)
	kb, _ := os.ReadFile(p.CAKey)
	blk, _ := pem.Decode(kb)
	caKey, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, tt := range []struct {
		name string
		dns  []string
		ips  []net.IP
	}{
		{"example.com", []string{"example.com"}, nil},
		{"localhost.example.com", []string{"localhost.example.com"}, nil},
		{"10.0.0.1", nil, []net.IP{net.ParseIP("10.0.0.1")}},
		{"192.168.1.1", nil, []net.IP{net.ParseIP("192.168.1.1")}},
	} {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: tt.name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: tt.dns, IPAddresses: tt.ips,
		}, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(der)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.name}); err == nil {
			t.Errorf("a certificate for %s verified under the development CA", tt.name)
		}
	}
}

func TestEnsure_Refuses(t *testing.T) {
	t.Parallel()
	t.Run("a host off loopback", func(t *testing.T) {
		if _, err := Ensure(t.TempDir(), []string{"127.0.0.1", "mcp.example.com"}, time.Now()); !errors.Is(err, ErrNotLoopback) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a CA key others can read", func(t *testing.T) {
		dir := t.TempDir()
		p, err := Ensure(dir, []string{"127.0.0.1"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p.CAKey, 0o640); err != nil {
			t.Fatal(err)
		}
		if _, err := Ensure(dir, []string{"127.0.0.1"}, time.Now()); err == nil || !strings.Contains(err.Error(), "lets others read") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a CA without name constraints", func(t *testing.T) {
		dir := t.TempDir()
		p := PathsIn(dir)
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wide"}, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		os.WriteFile(p.CA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
		if err := writeKey(p.CAKey, key); err != nil {
			t.Fatal(err)
		}
		if _, err := Ensure(dir, []string{"127.0.0.1"}, time.Now()); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(p.CA); !strings.Contains(string(b), "CERTIFICATE") {
			t.Fatal("the refused CA was overwritten")
		}
	})
	t.Run("a CA constrained to DNS names only", func(t *testing.T) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IsCA: true, BasicConstraintsValid: true,
			PermittedDNSDomainsCritical: true, PermittedDNSDomains: []string{"localhost"},
			NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		c, _ := x509.ParseCertificate(der)
		if err := CheckNarrow(c); err == nil {
			t.Fatal("a CA unconstrained for IP addresses passed")
		}
	})
}
