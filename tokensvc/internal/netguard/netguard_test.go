package netguard

import (
	"net/netip"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	t.Parallel()
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3", "192.0.0.170",
		"192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"255.255.255.255", "240.0.0.1",
		"::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
		"64:ff9b::a00:1", "64:ff9b:1::1", "::127.0.0.1", "2001:db8::1", "2002:7f00:1::1",
		"2001:0::1", "100::1", "3fff::1", "fe80::1%eth0",
	}
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.128.0.1", "2606:4700:4700::1111",
		"2a00:1450:4001:82a::200e", "64:ff9b::808:808", "::ffff:8.8.8.8"}
	for _, s := range blocked {
		if PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = true", s)
		}
	}
	for _, s := range public {
		if !PublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("PublicAddr(%s) = false", s)
		}
	}
	if PublicAddr(netip.Addr{}) {
		t.Error("zero address is public")
	}
}
