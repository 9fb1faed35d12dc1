package host

import (
	"encoding/binary"
	"io"
)

// The WASI functions below follow cpp-host's src/exports.cc (wasi_unstable_*), including its
// quirks, because that is what a module meets inside Envoy.

func wReturn(errno uint32) func(*vm, []uint64) {
	return func(v *vm, s []uint64) { s[0] = uint64(errno) }
}

// wStdioOnly answers errno for fd 1 and 2 and EBADF for anything else.
func wStdioOnly(errno uint32) func(*vm, []uint64) {
	return func(v *vm, s []uint64) {
		if fd := uint32(s[0]); fd != 1 && fd != 2 {
			s[0] = errnoBadf
			return
		}
		s[0] = uint64(errno)
	}
}

// writev gathers the iovecs and logs them: fd 1 at info, fd 2 at error, one trailing newline
// removed. Other descriptors are EBADF.
func (v *vm) writev(fd, iovs, iovsLen uint32) (uint32, uint32) {
	var level LogLevel
	switch fd {
	case 1:
		level = LogInfo
	case 2:
		level = LogError
	default:
		return 0, errnoBadf
	}
	var msg []byte
	for i := uint32(0); i < iovsLen; i++ {
		vec, ok := v.read(iovs+i*8, 8)
		if !ok {
			return 0, errnoFault
		}
		ptr := binary.LittleEndian.Uint32(vec)
		n := binary.LittleEndian.Uint32(vec[4:])
		if n == 0 {
			continue
		}
		b, ok := v.read(ptr, n)
		if !ok {
			return 0, errnoFault
		}
		msg = append(msg, b...)
	}
	written := uint32(len(msg))
	if written > 0 {
		if msg[len(msg)-1] == '\n' {
			msg = msg[:len(msg)-1]
		}
		v.guestLog(level, string(msg))
	}
	return written, errnoSuccess
}

func wFdWrite(v *vm, s []uint64) {
	n, errno := v.writev(uint32(s[0]), uint32(s[1]), uint32(s[2]))
	if errno != errnoSuccess {
		s[0] = uint64(errno)
		return
	}
	if !v.writeU32(uint32(s[3]), n) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wFdPwrite(v *vm, s []uint64) {
	n, errno := v.writev(uint32(s[0]), uint32(s[1]), uint32(s[2]))
	if errno != errnoSuccess {
		s[0] = uint64(errno)
		return
	}
	if !v.writeU32(uint32(s[4]), n) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wFdSeek(v *vm, s []uint64) {
	v.hostLog(LogError, "wasi_unstable fd_seek")
	s[0] = errnoSuccess
}

func wFdClose(v *vm, s []uint64) {
	v.hostLog(LogError, "wasi_unstable fd_close")
	s[0] = errnoSuccess
}

// wFdFdstatGet describes fd 1 and 2 as write-only character-less streams: a 24-byte fdstat of
// zeros with fs_rights_base = FD_WRITE (64).
func wFdFdstatGet(v *vm, s []uint64) {
	fd := uint32(s[0])
	if fd != 1 && fd != 2 {
		s[0] = errnoBadf
		return
	}
	var st [24]byte
	binary.LittleEndian.PutUint64(st[8:], 64)
	v.write(uint32(s[1]), st[:]) // cpp-host ignores the result here
	s[0] = errnoSuccess
}

func wEnvironSizesGet(v *vm, s []uint64) {
	size := 0
	for _, kv := range v.host.env {
		size += len(kv) + 1
	}
	if !v.writeU32(uint32(s[0]), uint32(len(v.host.env))) || !v.writeU32(uint32(s[1]), uint32(size)) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wEnvironGet(v *vm, s []uint64) {
	arr, buf := uint32(s[0]), uint32(s[1])
	for _, kv := range v.host.env {
		if !v.writeU32(arr, buf) {
			s[0] = errnoFault
			return
		}
		data := append([]byte(kv), 0)
		if !v.write(buf, data) {
			s[0] = errnoFault
			return
		}
		buf += uint32(len(data))
		arr += 4
	}
	s[0] = errnoSuccess
}

func wArgsSizesGet(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[0]), 0) || !v.writeU32(uint32(s[1]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wClockTimeGet(v *vm, s []uint64) {
	var t uint64
	switch uint32(s[0]) {
	case 0:
		t = v.host.realtimeNanos()
	case 1:
		t = v.host.monotonicNanos()
	default:
		s[0] = errnoNotsup
		return
	}
	if !v.writeU64(uint32(s[2]), t) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wClockResGet(v *vm, s []uint64) {
	switch uint32(s[0]) {
	case 0, 1:
	default:
		s[0] = errnoNotsup
		return
	}
	if !v.writeU64(uint32(s[1]), 1) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wRandomGet(v *vm, s []uint64) {
	ptr, n := uint32(s[0]), uint32(s[1])
	if n > maxRandomSize {
		s[0] = errnoInval
		return
	}
	if n == 0 {
		s[0] = errnoSuccess
		return
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(v.host.opts.Rand, b); err != nil {
		// cpp-host ignores RAND_bytes failures; report them in the host log instead.
		v.hostLog(LogError, "random_get: "+err.Error())
	}
	if !v.write(ptr, b) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

// wPollOneoff is the stub that matters for Go: before cpp-host #533 it answered ENOSYS, which
// the Go scheduler treats as fatal ("poll_oneoff failed"); since #533 it reports success with
// no events.
func wPollOneoff(v *vm, s []uint64) {
	v.host.pollCalls.Add(1)
	if v.host.opts.TraceSchedulerCalls {
		v.traceScheduler("poll_oneoff", v.pollWait(uint32(s[0]), uint32(s[2])))
	}
	if v.host.opts.Compat == CompatLegacy {
		s[0] = errnoNosys
		return
	}
	if !v.writeU32(uint32(s[3]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

// wProcExit marks the VM failed. cpp-host only logs "wasi_unstable proc_exit" and returns to a
// guest that does not expect it; this host stops the guest at once (see doc.go).
func wProcExit(v *vm, s []uint64) {
	v.hostLog(LogError, "wasi_unstable proc_exit")
	panic(&TrapError{Func: "wasi_snapshot_preview1.proc_exit", Reason: "proc_exit(" + itoa(uint64(uint32(s[0]))) + ")"})
}

func wFdReaddir(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[4]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = 20 // cpp-host's literal (it means ENOTDIR; WASI's 20 is EEXIST)
}

func wFdRenumber(v *vm, s []uint64) {
	fd, to := uint32(s[0]), uint32(s[1])
	if (fd != 1 && fd != 2) || (to != 1 && to != 2) {
		s[0] = errnoBadf
		return
	}
	s[0] = errnoNotsup
}

func wFdTell(v *vm, s []uint64) {
	if fd := uint32(s[0]); fd != 1 && fd != 2 {
		s[0] = errnoBadf
		return
	}
	if !v.writeU64(uint32(s[1]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wPathReadlink(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[5]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoNotsup
}

func wSockAccept(v *vm, s []uint64) {
	if !v.writeU64(uint32(s[2]), 0) { // cpp-host writes an unsigned long here
		s[0] = errnoFault
		return
	}
	s[0] = errnoNotsup
}

func wSockRecv(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[4]), 0) || !v.write(uint32(s[5]), []byte{0, 0}) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoNotsup
}

func wSockSend(v *vm, s []uint64) {
	if !v.writeU32(uint32(s[4]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoNotsup
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
