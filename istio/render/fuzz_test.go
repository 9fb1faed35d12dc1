package render

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmesh/gateway/shared/config"
)

// FuzzTokenServiceCluster: any token_service.cluster is either refused with an *Error naming
// a token_service key, or read into a service whose outbound cluster name is the input.
func FuzzTokenServiceCluster(f *testing.F) {
	for _, s := range []string{"outbound|8481||tokensvc.gw.svc.cluster.local", "gateway-tokensvc", "outbound|0||a.b.svc.c", "outbound|8481|v1|a.b.svc.cluster.local", "outbound|8481||A.b.svc.x", "outbound|8481||a.b.svc."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cluster string) {
		cfg := &config.Config{TokenService: config.TokenService{Cluster: cluster, Address: "0.0.0.0:8480", InternalAddress: "0.0.0.0:8481"}}
		parts := strings.Split(cluster, "|")
		if len(parts) == 4 {
			cfg.TokenService.Authority = parts[3]
			if _, err := strconv.Atoi(parts[1]); err == nil {
				cfg.TokenService.InternalAddress = "0.0.0.0:" + parts[1]
			}
		}
		ts, err := parseTokenService(cfg)
		if err != nil {
			if e, ok := err.(*Error); !ok || !strings.HasPrefix(e.Key, "token_service.") {
				t.Fatalf("error %v does not name a token_service key", err)
			}
			return
		}
		if got := "outbound|" + strconv.Itoa(ts.InternalPort) + "||" + ts.FQDN(); got != cluster {
			t.Fatalf("read %q as %+v (%s)", cluster, ts, got)
		}
		if !dnsLabel.MatchString(ts.Name) || !dnsLabel.MatchString(ts.Namespace) {
			t.Fatalf("%q: names %q %q are not DNS labels", cluster, ts.Name, ts.Namespace)
		}
	})
}

// FuzzStripDSNPassword: the password of a PostgreSQL URL never survives, stripping twice is
// stripping once, and a DSN without password is left alone.
func FuzzStripDSNPassword(f *testing.F) {
	for _, s := range []string{"postgres://u:p@h:5432/db?sslmode=require", "host=h user=u password='a b\\'c' dbname=d", "postgresql://u@h/db?password=x", "host=h password=x", "postgres://h/db"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		once := stripDSNPassword(dsn)
		if twice := stripDSNPassword(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", dsn, once, twice)
		}
		if strings.HasPrefix(once, "postgres://") || strings.HasPrefix(once, "postgresql://") {
			if u, err := url.Parse(once); err == nil {
				if _, ok := u.User.Password(); ok || u.Query().Has("password") {
					t.Fatalf("password left in %q (from %q)", once, dsn)
				}
			}
		}
	})
}
