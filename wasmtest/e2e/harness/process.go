package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logCap bounds how much of a child's output the harness keeps (the newest part is kept).
const logCap = 256 << 10

// tailBuffer is an io.Writer keeping the last logCap bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - logCap; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// process is a child process started for one test.
type process struct {
	name   string
	cmd    *exec.Cmd
	output *tailBuffer // stdout after the ready line, and stderr
	done   chan struct{}
	err    error // set before done is closed
}

// startProcess starts cmd, and if ready is non-nil waits up to timeout for a stdout line for
// which ready returns ok, returning its value. The process is stopped (SIGTERM, then SIGKILL)
// when the test ends; its output is logged if the test failed.
func startProcess(t testing.TB, name string, cmd *exec.Cmd, ready func(line string) (string, bool), timeout time.Duration) (*process, string) {
	t.Helper()
	p := &process{name: name, cmd: cmd, output: &tailBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.output
	setParentDeathSignal(cmd)
	var stdout io.ReadCloser
	if ready != nil {
		var err error
		if stdout, err = cmd.StdoutPipe(); err != nil {
			t.Fatalf("harness: %s: stdout pipe: %v", name, err)
		}
	} else {
		cmd.Stdout = p.output
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("harness: start %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("harness: output of %s (%s):\n%s", name, p.state(), tail(p.output.String(), 16<<10))
		}
	})

	readyCh := make(chan string, 1)
	if ready != nil {
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			found := false
			for sc.Scan() {
				line := sc.Text()
				if !found {
					if v, ok := ready(line); ok {
						found = true
						readyCh <- v
						continue
					}
				}
				fmt.Fprintln(p.output, line)
			}
			_, _ = io.Copy(p.output, stdout)
		}()
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if ready == nil {
		return p, ""
	}
	select {
	case v := <-readyCh:
		return p, v
	case <-p.done:
		t.Fatalf("harness: %s exited before it was ready (%v):\n%s", name, p.err, tail(p.output.String(), 8<<10))
	case <-time.After(timeout):
		t.Fatalf("harness: %s not ready after %v:\n%s", name, timeout, tail(p.output.String(), 8<<10))
	}
	return p, ""
}

// state describes whether the process is still running.
func (p *process) state() string {
	select {
	case <-p.done:
		if p.err != nil {
			return "exited: " + p.err.Error()
		}
		return "exited"
	default:
		return "running"
	}
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGTERM, then SIGKILL after three seconds.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until any HTTP response arrives, the process exits, or timeout passes.
func waitHTTP(p *process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			return fmt.Errorf("poll %s: %w", url, err)
		}
		resp, err := client.Do(req)
		cancel()
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%s)", p.name, p.state())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("poll %s: no answer after %v: %w", url, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childEnv returns the environment for a child process: this process's environment without
// the variables the harness sets itself, plus extra.
func childEnv(extra ...string) []string {
	drop := map[string]bool{}
	for _, kv := range extra {
		if k, _, ok := strings.Cut(kv, "="); ok {
			drop[k] = true
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "GATEWAY_E2E_") || k == "NODE_OPTIONS" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
