// Package devca makes the development certificate authority of the local gateway and the
// certificates it issues for loopback hosts (`localgateway -dev-ca DIR`, docs/clients.md#tls).
//
// The CA is name-constrained (critical) to `localhost` and the loopback addresses
// (127.0.0.0/8, ::1): trusting it — NODE_EXTRA_CA_CERTS, SSL_CERT_FILE — lets it vouch for
// nothing but this machine, even if its key leaks. Its key is written with mode 0600, and an
// existing CA in the directory is used only if it is still that narrow and its key is readable
// by its owner alone; anything else is refused rather than trusted or overwritten.
package devca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names in the directory.
const (
	CAFile    = "ca.pem"     // the CA certificate: what clients trust
	CAKeyFile = "ca-key.pem" // the CA key, mode 0600
	CertFile  = "cert.pem"   // the server certificate: certificate_file
	KeyFile   = "key.pem"    // its key, mode 0600: certificate_key_file
)

// Lifetimes of what Ensure makes.
const (
	CALifetime   = 5 * 365 * 24 * time.Hour
	LeafLifetime = 90 * 24 * time.Hour
)

// Paths are the files of a directory.
type Paths struct{ CA, CAKey, Cert, Key string }

// PathsIn returns the file paths in dir.
func PathsIn(dir string) Paths {
	return Paths{filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile), filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)}
}

// ErrNotLoopback refuses a host the CA may not vouch for.
var ErrNotLoopback = errors.New("not a loopback host (localhost, 127.0.0.0/8 or ::1)")

// loopbackV4 and loopbackV6 are the permitted IP ranges.
var (
	loopbackV4 = &net.IPNet{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)}
	loopbackV6 = &net.IPNet{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)}
)

// Ensure makes dir's CA if there is none (or uses the one there after checking it), then
// issues a fresh server certificate for hosts (host names or IP addresses, each localhost or
// loopback). now is the clock.
func Ensure(dir string, hosts []string, now time.Time) (Paths, error) {
	p := PathsIn(dir)
	var dnsNames []string
	var ips []net.IP
	for _, h := range hosts {
		h = strings.Trim(strings.ToLower(h), "[]")
		switch ip := net.ParseIP(h); {
		case ip != nil && ip.IsLoopback():
			ips = append(ips, ip)
		case ip == nil && (h == "localhost" || strings.HasSuffix(h, ".localhost")):
			dnsNames = append(dnsNames, h)
		default:
			return p, fmt.Errorf("devca: %q: %w", h, ErrNotLoopback)
		}
	}
	if len(dnsNames)+len(ips) == 0 {
		return p, errors.New("devca: no host to issue a certificate for")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	caCert, caKey, err := loadCA(p)
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, err = newCA(p, now)
	}
	if err != nil {
		return p, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return p, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mcp-gateway local development"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(LeafLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return p, fmt.Errorf("devca: issue the certificate: %w", err)
	}
	if err := writeKey(p.Key, key); err != nil {
		return p, err
	}
	return p, os.WriteFile(p.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// newCA makes and writes a CA.
func newCA(p Paths, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "mcp-gateway development CA (loopback only)"},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(CALifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLen:                  0,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         []string{"localhost"},
		PermittedIPRanges:           []*net.IPNet{loopbackV4, loopbackV6},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(p.CAKey, key); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(p.CA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// loadCA reads the CA of p and refuses one that is wider than loopback or whose key others
// may read. A missing CA is reported as os.ErrNotExist.
func loadCA(p Paths) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.CA)
	if err != nil {
		return nil, nil, err
	}
	st, err := os.Stat(p.CAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("devca: %s exists but its key %s cannot be read: %w", p.CA, p.CAKey, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("devca: refusing %s: mode %v lets others read the CA key; remove the directory to make a new CA", p.CAKey, st.Mode().Perm())
	}
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("devca: %s is not a PEM certificate", p.CA)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("devca: %s: %w", p.CA, err)
	}
	if err := CheckNarrow(cert); err != nil {
		return nil, nil, fmt.Errorf("devca: refusing %s: %w; remove the directory to make a new CA", p.CA, err)
	}
	keyPEM, err := os.ReadFile(p.CAKey)
	if err != nil {
		return nil, nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("devca: %s is not a PEM key", p.CAKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("devca: %s: %w", p.CAKey, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("devca: %s: unsupported key", p.CAKey)
	}
	pub, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil || !bytes.Equal(pub, cert.RawSubjectPublicKeyInfo) {
		return nil, nil, fmt.Errorf("devca: %s does not belong to %s", p.CAKey, p.CA)
	}
	return cert, signer, nil
}

// CheckNarrow reports why cert is not a CA limited to loopback: it must be a CA whose critical
// name constraints permit only localhost names and loopback addresses, for both kinds (a kind
// with no permitted subtree would be unconstrained).
func CheckNarrow(cert *x509.Certificate) error {
	switch {
	case !cert.IsCA:
		return errors.New("not a CA certificate")
	case !cert.PermittedDNSDomainsCritical:
		return errors.New("its name constraints are missing or not critical")
	case len(cert.PermittedDNSDomains) == 0 || len(cert.PermittedIPRanges) == 0:
		return errors.New("it is not constrained to loopback names and addresses")
	}
	for _, d := range cert.PermittedDNSDomains {
		if d = strings.TrimPrefix(strings.ToLower(d), "."); d != "localhost" && !strings.HasSuffix(d, ".localhost") {
			return fmt.Errorf("it permits the DNS domain %q", d)
		}
	}
	for _, r := range cert.PermittedIPRanges {
		ones, bits := r.Mask.Size()
		inside := bits == 32 && ones >= 8 && loopbackV4.Contains(r.IP) || bits == 128 && ones == 128 && r.IP.Equal(net.IPv6loopback)
		if !inside {
			return fmt.Errorf("it permits the addresses %v", r)
		}
	}
	if len(cert.PermittedEmailAddresses)+len(cert.PermittedURIDomains) > 0 {
		return errors.New("it permits email addresses or URIs")
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	// Remove first: WriteFile keeps the mode of an existing file.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
