package reliability

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pgServer is a PostgreSQL server of the test's own (initdb into a temporary directory, a
// free loopback port), so that the test can restart or crash a real server without touching
// the shared one other tests use. As root, its commands run as the postgres user (PostgreSQL
// refuses to run as root).
type pgServer struct {
	initdb, pgctl string
	dir, data     string
	port          int
	runAs         string // user to run the commands as; "" for the current one
	opts          string // the server's options (pg_ctl -o)
	// DSN connects to the server's postgres database as its superuser.
	DSN string
}

// startPGServer initialises and starts a server. It skips the test when initdb and pg_ctl
// are not on PATH (or in the directory pg_config --bindir names), or when running as root
// with no postgres user to run them as.
func startPGServer(t *testing.T) *pgServer {
	t.Helper()
	p := &pgServer{}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bin := strings.TrimSpace(string(out))
		p.initdb, p.pgctl = filepath.Join(bin, "initdb"), filepath.Join(bin, "pg_ctl")
	}
	for _, b := range []*string{&p.initdb, &p.pgctl} {
		if _, err := os.Stat(*b); *b == "" || err != nil {
			found, err := exec.LookPath(filepath.Base(map[*string]string{&p.initdb: "initdb", &p.pgctl: "pg_ctl"}[b]))
			if err != nil {
				t.Skip("PostgreSQL's initdb and pg_ctl are not installed: this test restarts a PostgreSQL server of its own")
			}
			*b = found
		}
	}
	dir, err := os.MkdirTemp("", "reliability-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p.dir, p.data = dir, filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			t.Skip("running as root with no postgres user: PostgreSQL will not run as root")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.runAs = "postgres"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	p.run(t, p.initdb, "-D", p.data, "-U", "gateway", "--auth=trust", "--no-sync", "-E", "UTF8")
	p.opts = fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s", p.port, p.dir)
	p.ctl(t, "start")
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(p.dir, "server.log")); err == nil {
				t.Logf("PostgreSQL server log (last 4 KiB):\n%s", b[max(0, len(b)-4096):])
			}
		}
		_ = p.cmd(p.pgctl, "-D", p.data, "-m", "immediate", "-w", "stop").Run()
	})
	p.DSN = fmt.Sprintf("postgres://gateway@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	return p
}

// cmd is a command run as the server's owner.
func (p *pgServer) cmd(name string, args ...string) *exec.Cmd {
	if p.runAs != "" {
		return exec.Command("runuser", append([]string{"-u", p.runAs, "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func (p *pgServer) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := p.cmd(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// ctl runs pg_ctl with args (restart, stop, start with a -m mode) on the server, waiting
// for it to finish, and returns how long it took.
func (p *pgServer) ctl(t *testing.T, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	args = append([]string{"-D", p.data, "-l", filepath.Join(p.dir, "server.log"), "-o", p.opts, "-w", "-t", "60"}, args...)
	p.run(t, p.pgctl, args...)
	return time.Since(start)
}
