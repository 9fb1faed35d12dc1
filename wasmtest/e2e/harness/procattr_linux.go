package harness

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child if the test binary dies without
// running its cleanups (a panic in another goroutine, a timeout kill).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
