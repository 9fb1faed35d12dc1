package reliability

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/wasmtest/e2e/harness"
)

// buildTokensvc builds the token service command into the test's temporary directory.
func buildTokensvc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tokensvc")
	cmd := exec.Command("go", "build", "-o", bin, "./tokensvc/cmd/tokensvc")
	cmd.Dir = harness.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build tokensvc: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a 127.0.0.1 address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l := listen(t)
	a := l.Addr().String()
	l.Close()
	return a
}

// replica is one token service process on fixed listener addresses, so that it can be killed
// and started again where the gateway expects it.
type replica struct {
	bin, cfg         string
	public, internal string
	mu               sync.Mutex
	cmd              *exec.Cmd
	done             chan struct{}
	out              *testWriter
}

func newReplica(t *testing.T, bin, yaml string) *replica {
	t.Helper()
	r := &replica{bin: bin, public: freeAddr(t), internal: freeAddr(t), out: newTestWriter(t)}
	r.cfg = filepath.Join(t.TempDir(), "replica.yaml")
	if err := os.WriteFile(r.cfg, []byte(replicaYAML(yaml, r.public, r.internal)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	return r
}

// start starts the process and waits until its public listener is ready.
func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(r.bin, "-config", r.cfg, "-log-format", "text", "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = r.out, r.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start tokensvc: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := httpClient.Get("http://" + r.public + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			t.Fatalf("tokensvc exited before it was ready")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tokensvc not ready after 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pid is the process ID, 0 when not running.
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// kill ends the process with SIGKILL (no graceful shutdown) and waits for it.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// standIn occupies addresses where replicas were, accepting connections and either never
// answering (hang) or answering garbage (junk).
type standIn struct {
	mu    sync.Mutex
	ls    []net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func startStandIns(t *testing.T, junk bool, addrs ...string) *standIn {
	t.Helper()
	s := &standIn{}
	for _, a := range addrs {
		var l net.Listener
		var err error
		for range 50 {
			if l, err = net.Listen("tcp", a); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("stand-in on %s: %v", a, err)
		}
		s.ls = append(s.ls, l)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for i := 0; ; i++ {
				c, err := l.Accept()
				if err != nil {
					return
				}
				s.mu.Lock()
				s.conns = append(s.conns, c)
				s.mu.Unlock()
				if junk {
					go answerJunk(c, i)
				}
			}
		}()
	}
	t.Cleanup(s.stop)
	return s
}

// answerJunk reads the request head and answers garbage: every other time a well-formed
// HTTP response whose body is not what the caller expects, otherwise bytes that are not HTTP.
func answerJunk(c net.Conn, i int) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	var body int64
	for {
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimSpace(line) == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			body, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	_, _ = io.CopyN(io.Discard, br, min(body, 1<<20))
	if i%2 == 0 {
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"status\":\"o"))
		return
	}
	_, _ = c.Write([]byte("\x00\xff\x13garbage that is no HTTP\r\n\r\n"))
}

func (s *standIn) stop() {
	s.mu.Lock()
	for _, l := range s.ls {
		l.Close()
	}
	for _, c := range s.conns {
		c.Close()
	}
	s.ls, s.conns = nil, nil
	s.mu.Unlock()
	s.wg.Wait()
}
